stats --bogus valid/abort.log
