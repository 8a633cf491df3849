filter valid/hang-r0.log valid/hang-r1.log valid/hang-r2.log valid/hang-r3.log --op all_reduce --event Q,E --since +0.025 --until 1714234567.041
