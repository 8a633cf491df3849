check valid/abort.log valid/escapes.log
