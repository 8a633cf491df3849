check --bogus valid/abort.log
