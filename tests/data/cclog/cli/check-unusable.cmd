check invalid/not-clog.log valid/basic.log
