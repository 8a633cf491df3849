merge valid/basic.log valid/escapes.log
