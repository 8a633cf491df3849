merge valid/hang-r0.log valid/hang-r1.log valid/hang-r2.log valid/hang-r3.log
