filter valid/split.log valid/abort.log --comm world
