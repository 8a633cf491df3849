follow --no-wait valid/escapes.log
