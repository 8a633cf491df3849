check valid/basic.log valid/split.log
