follow --no-wait valid/basic.log
