merge valid/basic.log valid/does-not-exist.log
