frobnicate valid/basic.log
