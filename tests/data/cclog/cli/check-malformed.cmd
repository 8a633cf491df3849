check invalid/bad-lines.log
