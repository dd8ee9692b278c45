#include "textflag.h"

// XXH3-64 of 512-byte inputs (docs/spec/radix-acks.md §1.14's page hash
// of 64 units), with AVX-512: the xxHash specification's long-input path,
// which for 512 bytes is seven stripes and the last one accumulated
// (no scramble: a block is 1,024 bytes), then the accumulators merged and
// avalanched. TestHash512IsXXH3 and TestHash512WidenIsWidenThenXXH3 check
// the three kernels below against github.com/zeebo/xxh3 and ref. Each can
// also fold each page hash into the chain (§1.14: hᵢ = XXH3-64 of hᵢ₋₁ ‖
// pᵢ, 16 bytes) as the page ends, its scalar chain running beside the next
// page's vector work.

// The default secret (the specification's kSecret), 192 bytes.
DATA xxhSecret<>+0(SB)/8, $0xbe4ba423396cfeb8
DATA xxhSecret<>+8(SB)/8, $0x1cad21f72c81017c
DATA xxhSecret<>+16(SB)/8, $0xdb979083e96dd4de
DATA xxhSecret<>+24(SB)/8, $0x1f67b3b7a4a44072
DATA xxhSecret<>+32(SB)/8, $0x78e5c0cc4ee679cb
DATA xxhSecret<>+40(SB)/8, $0x2172ffcc7dd05a82
DATA xxhSecret<>+48(SB)/8, $0x8e2443f7744608b8
DATA xxhSecret<>+56(SB)/8, $0x4c263a81e69035e0
DATA xxhSecret<>+64(SB)/8, $0xcb00c391bb52283c
DATA xxhSecret<>+72(SB)/8, $0xa32e531b8b65d088
DATA xxhSecret<>+80(SB)/8, $0x4ef90da297486471
DATA xxhSecret<>+88(SB)/8, $0xd8acdea946ef1938
DATA xxhSecret<>+96(SB)/8, $0x3f349ce33f76faa8
DATA xxhSecret<>+104(SB)/8, $0x1d4f0bc7c7bbdcf9
DATA xxhSecret<>+112(SB)/8, $0x3159b4cd4be0518a
DATA xxhSecret<>+120(SB)/8, $0x647378d9c97e9fc8
DATA xxhSecret<>+128(SB)/8, $0xc3ebd33483acc5ea
DATA xxhSecret<>+136(SB)/8, $0xeb6313faffa081c5
DATA xxhSecret<>+144(SB)/8, $0x49daf0b751dd0d17
DATA xxhSecret<>+152(SB)/8, $0x9e68d429265516d3
DATA xxhSecret<>+160(SB)/8, $0xfca1477d58be162b
DATA xxhSecret<>+168(SB)/8, $0xce31d07ad1b8f88f
DATA xxhSecret<>+176(SB)/8, $0x280416958f3acb45
DATA xxhSecret<>+184(SB)/8, $0x7e404bbbcafbd7af
GLOBL xxhSecret<>(SB), RODATA|NOPTR, $192

// The initial accumulators (PRIME32_3, PRIME64_1..3, PRIME64_4, PRIME32_2,
// PRIME64_5, PRIME32_1).
DATA xxhInit<>+0(SB)/8, $0x00000000C2B2AE3D
DATA xxhInit<>+8(SB)/8, $0x9E3779B185EBCA87
DATA xxhInit<>+16(SB)/8, $0xC2B2AE3D27D4EB4F
DATA xxhInit<>+24(SB)/8, $0x165667B19E3779F9
DATA xxhInit<>+32(SB)/8, $0x85EBCA77C2B2AE63
DATA xxhInit<>+40(SB)/8, $0x0000000085EBCA77
DATA xxhInit<>+48(SB)/8, $0x27D4EB2F165667C5
DATA xxhInit<>+56(SB)/8, $0x000000009E3779B1
GLOBL xxhInit<>(SB), RODATA|NOPTR, $64

// ACC accumulates the stripe in Z1 with the secret in key:
// acc[i^1] += data[i]; acc[i] += lo32(data[i]^key[i]) * hi32(data[i]^key[i]).
#define ACC(key) \
	VPXORQ    key, Z1, Z2 \
	VPSHUFD   $0x4e, Z1, Z3 \
	VPADDQ    Z3, Z0, Z0 \
	VPSRLQ    $32, Z2, Z4 \
	VPMULUDQ  Z4, Z2, Z5 \
	VPADDQ    Z5, Z0, Z0

// STRIPE accumulates the 64 bytes at off(SI), ORing them into Z6 (a unit
// past 2^32-1 sets a high bit: the range check of §1.1, for free).
#define STRIPE(off, key) \
	VMOVDQU64 off(SI), Z1 \
	VPORQ     Z1, Z6, Z6 \
	ACC(key)

// WSTRIPE is stripe k of a page of u32 ids: its 8 ids at 32k(SI), widened
// into Z1 and stored at 64k(BX) before they are accumulated.
#define WSTRIPE(k, key) \
	VPMOVZXDQ (32*k)(SI), Z1 \
	VMOVDQU64 Z1, (64*k)(BX) \
	ACC(key)

// LSTRIPE is WSTRIPE without the store.
#define LSTRIPE(k, key) \
	VPMOVZXDQ (32*k)(SI), Z1 \
	ACC(key)

// SETUP loads the initial accumulators (Z16), the secret's stripes (Z8-Z15,
// the last stripe's from 121) and the 16-byte hash's bitflips
// secret[24:32]^secret[32:40] (R11) and secret[40:48]^secret[48:56] (R13).
#define SETUP \
	VMOVDQU64 xxhInit<>+0(SB), Z16 \
	VMOVDQU64 xxhSecret<>+0(SB), Z8 \
	VMOVDQU64 xxhSecret<>+8(SB), Z9 \
	VMOVDQU64 xxhSecret<>+16(SB), Z10 \
	VMOVDQU64 xxhSecret<>+24(SB), Z11 \
	VMOVDQU64 xxhSecret<>+32(SB), Z12 \
	VMOVDQU64 xxhSecret<>+40(SB), Z13 \
	VMOVDQU64 xxhSecret<>+48(SB), Z14 \
	VMOVDQU64 xxhSecret<>+121(SB), Z15 \
	MOVQ $0x6782737bea4239b9, R11 \
	MOVQ $0xaf56bc3b0996523a, R13

// MIX adds the folded 128-bit product of accumulators 2i and 2i+1, each
// XORed with the secret from 11+16i.
#define MIX(i) \
	MOVQ (16*i)(SP), AX \
	XORQ xxhSecret<>+(11+16*i)(SB), AX \
	MOVQ (16*i+8)(SP), R9 \
	XORQ xxhSecret<>+(19+16*i)(SB), R9 \
	MULQ R9 \
	XORQ DX, AX \
	ADDQ AX, R8

// AVALANCHE is XXH3's final mix of r: r ^= r>>37; r *= 0x165667919E3779F9;
// r ^= r>>32.
#define AVALANCHE(r) \
	MOVQ r, AX \
	SHRQ $37, AX \
	XORQ AX, r \
	MOVQ $0x165667919E3779F9, AX \
	IMULQ AX, r \
	MOVQ r, AX \
	SHRQ $32, AX \
	XORQ AX, r

// MERGE is the page's hash in R8 from the accumulators in Z0: merged from
// len(512)·PRIME64_1 with the secret from 11, then avalanched.
#define MERGE \
	VMOVDQU64 Z0, 0(SP) \
	MOVQ $0x9E3779B185EBCA87, R8 \
	SHLQ $9, R8 \
	MIX(0) \
	MIX(1) \
	MIX(2) \
	MIX(3) \
	AVALANCHE(R8)

// FOLD sets R8 and R10 to the 16-byte XXH3-64 of R10 ‖ R8 (seed 0):
// lo = R10^bitflip1, hi = R8^bitflip2, acc = 16 + bswap(lo) + hi +
// fold(lo·hi), avalanched.
#define FOLD \
	MOVQ R10, AX \
	XORQ R11, AX \
	XORQ R13, R8 \
	MOVQ AX, R9 \
	BSWAPQ R9 \
	ADDQ R8, R9 \
	ADDQ $16, R9 \
	MULQ R8 \
	XORQ DX, AX \
	ADDQ AX, R9 \
	AVALANCHE(R9) \
	MOVQ R9, R8 \
	MOVQ R9, R10

// func hash512AVX512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) (acc uint64)
// dst[i] = XXH3-64(src[512i:512i+512]) (with fold, the chain from prev);
// src holds 512·len(dst) bytes. acc is the OR of every 8-byte unit.
TEXT ·hash512AVX512(SB), NOSPLIT, $64-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ prev+48(FP), R10
	MOVBLZX fold+56(FP), R12
	VPXORQ Z6, Z6, Z6
	TESTQ CX, CX
	JZ   done
	SETUP

page:
	VMOVDQA64 Z16, Z0
	STRIPE(0, Z8)
	STRIPE(64, Z9)
	STRIPE(128, Z10)
	STRIPE(192, Z11)
	STRIPE(256, Z12)
	STRIPE(320, Z13)
	STRIPE(384, Z14)
	STRIPE(448, Z15) // the last stripe: the input's last 64 bytes, the secret from 121
	MERGE
	TESTQ R12, R12
	JZ   store
	FOLD

store:
	MOVQ R8, (DI)
	ADDQ $512, SI
	ADDQ $8, DI
	DECQ CX
	JNZ  page

done:
	// The OR of Z6's eight lanes.
	VEXTRACTI64X4 $1, Z6, Y7
	VPOR          Y7, Y6, Y6
	VEXTRACTI128  $1, Y6, X7
	VPOR          X7, X6, X6
	VPSHUFD       $0x4e, X6, X7
	VPOR          X7, X6, X6
	VMOVQ         X6, AX
	MOVQ          AX, acc+64(FP)
	VZEROUPPER
	RET

// func hash512WidenAVX512(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool)
// units[j] = the little-endian u32 at src[4j:4j+4] for the 64·len(dst)
// units, and dst[i] = the XXH3-64 pᵢ of units[64i:64i+64]'s 512 bytes
// (with fold, the chain hᵢ from h₋₁ = prev): the widening and
// hash512AVX512 in one pass. Each 32 bytes of ids are widened in a
// register that is both stored and hashed, so the hash never reads the
// widened units back.
TEXT ·hash512WidenAVX512(SB), NOSPLIT, $64-81
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ units_base+24(FP), BX
	MOVQ src_base+48(FP), SI
	MOVQ prev+72(FP), R10
	MOVBLZX fold+80(FP), R12
	TESTQ CX, CX
	JZ   wdone
	SETUP

wpage:
	VMOVDQA64 Z16, Z0
	WSTRIPE(0, Z8)
	WSTRIPE(1, Z9)
	WSTRIPE(2, Z10)
	WSTRIPE(3, Z11)
	WSTRIPE(4, Z12)
	WSTRIPE(5, Z13)
	WSTRIPE(6, Z14)
	WSTRIPE(7, Z15) // the last stripe: the page's last 64 bytes, the secret from 121
	MERGE
	TESTQ R12, R12
	JZ   wstore
	FOLD

wstore:
	MOVQ R8, (DI)
	ADDQ $256, SI
	ADDQ $512, BX
	ADDQ $8, DI
	DECQ CX
	JNZ  wpage
	VZEROUPPER

wdone:
	RET

// func hash512LE32AVX512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool)
// hash512WidenAVX512 without storing the widened ids: dst[i] is the page
// hash pᵢ (or, with fold, the chain hᵢ from h₋₁ = prev) of the 64
// little-endian u32 ids at src[256i:256i+256], each widened to its 8-byte
// unit in a register only. A binary prompt's score hashes and walks from
// the ids as they arrived and never writes the 8-byte list.
TEXT ·hash512LE32AVX512(SB), NOSPLIT, $64-57
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ prev+48(FP), R10
	MOVBLZX fold+56(FP), R12
	TESTQ CX, CX
	JZ   ldone
	SETUP

lpage:
	VMOVDQA64 Z16, Z0
	LSTRIPE(0, Z8)
	LSTRIPE(1, Z9)
	LSTRIPE(2, Z10)
	LSTRIPE(3, Z11)
	LSTRIPE(4, Z12)
	LSTRIPE(5, Z13)
	LSTRIPE(6, Z14)
	LSTRIPE(7, Z15) // the last stripe: the page's last 64 bytes, the secret from 121
	MERGE
	TESTQ R12, R12
	JZ   lstore
	FOLD

lstore:
	MOVQ R8, (DI)
	ADDQ $256, SI
	ADDQ $8, DI
	DECQ CX
	JNZ  lpage
	VZEROUPPER

ldone:
	RET
