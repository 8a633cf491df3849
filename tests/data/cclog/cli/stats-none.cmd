stats valid/lifecycle.log
