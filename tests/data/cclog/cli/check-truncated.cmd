check invalid/truncated.log
