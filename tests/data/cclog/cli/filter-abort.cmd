filter valid/abort.log --event A
