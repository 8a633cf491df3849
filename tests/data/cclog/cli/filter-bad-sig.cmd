filter valid/basic.log --sig x
