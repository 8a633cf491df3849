filter valid/basic.log --event Q,Z
