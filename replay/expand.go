package replay

import (
	"github.com/kvtwin/kvtwin/spec"
)

// BlockToken is token j (0 <= j < 512) of the block named by hash id
// (<= MaxHashID): fmix32(uint32(id) XOR uint32(j)·0x9E3779B9), where
// fmix32 is MurmurHash3's 32-bit finalizer.
//
// Why this function: it is deterministic (equal ids give equal tokens, in
// every process), and because fmix32 is a bijection on uint32 (xor-shifts
// and odd multipliers are invertible) token 0 is fmix32(id), so distinct
// ids give distinct first tokens. Two prompts therefore share exactly the
// tokens of their shared leading blocks: a token-mode prefix match never
// runs past a block boundary by accident, whatever the page size. The
// remaining positions are scrambled so that a block's pages differ from
// each other and from other blocks', as real text would.
func BlockToken(id spec.Unit, j int) uint32 {
	return fmix32(uint32(id) ^ uint32(j)*0x9E3779B9)
}

// fmix32 is MurmurHash3's finalizer: a bijection on uint32 with full
// avalanche.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// AppendTokens appends req's prompt tokens to dst: each hash id expands to
// its BlockToken sequence, the last block truncated to its length. The
// caller bounds req (CheckRequest), so the growth is at most
// lim.MaxInputLength units.
func AppendTokens(dst []spec.Unit, req Request) []spec.Unit {
	for i, id := range req.HashIDs {
		for j := range blockLen(req, i) {
			dst = append(dst, spec.Unit(BlockToken(id, j)))
		}
	}
	return dst
}

// TokenKey is req's token-mode key in buf's storage (buf is reused, so the
// key is valid until the next call with the same buf).
func TokenKey(buf []spec.Unit, req Request) spec.RadixKey {
	return spec.RadixKey{Units: AppendTokens(buf[:0], req)}
}

// BlockKey is req's blocks-mode key: its hash ids as units. It views
// req.HashIDs; trees never modify a key's units.
func BlockKey(req Request) spec.RadixKey {
	return spec.RadixKey{Units: req.HashIDs}
}
