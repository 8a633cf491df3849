follow valid/basic.log valid/abort.log
