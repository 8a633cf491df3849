check valid/lifecycle.log valid/nothing.log
