merge --bogus valid/abort.log
