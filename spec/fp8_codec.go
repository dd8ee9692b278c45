package spec

// E4M3NaN is the e4m3fn NaN code an encoder emits (sign dropped, §0.4 step 2).
const E4M3NaN uint8 = 0x7F

// E4M3Max is the largest finite e4m3fn code, 448 (§0.4).
const E4M3Max uint8 = 0x7E
