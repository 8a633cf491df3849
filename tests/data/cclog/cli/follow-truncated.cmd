follow --no-wait invalid/truncated.log
