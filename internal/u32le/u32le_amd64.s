#include "textflag.h"

// func widenVector(dst []int64, src []byte)
TEXT ·widenVector(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	SHRQ $3, CX
	JZ   done

loop:
	VPMOVZXDQ (SI), Y0
	VPMOVZXDQ 16(SI), Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER

done:
	RET
