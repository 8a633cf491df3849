stats valid/basic.log valid/split.log valid/abort.log valid/p2p.log
