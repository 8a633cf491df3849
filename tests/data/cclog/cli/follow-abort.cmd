follow --no-wait valid/abort.log
