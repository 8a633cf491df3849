follow --duration 0.3 --interval 50 valid/split.log
