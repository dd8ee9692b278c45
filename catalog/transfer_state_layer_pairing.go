package catalog

import (
	"math/rand/v2"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferStateLayerPairing registers transfer.state_layer_pairing (docs/spec/transfer.md §6).
func TransferStateLayerPairing() *Op[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput] {
	pattern := "FSSSFSSS"
	return &Op[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
		OpName:  "transfer.state_layer_pairing",
		SpecRef: "transfer.md §6",
		Summary: "pair prefill and decode NSA index state buffers by logical layer id, and their compact slots",
		Ref:     ref.TransferStateLayerPairing,
		Fast:    fast.TransferStateLayerPairing,
		Sample: spec.TransferStateLayerPairingInput{
			PPSize: 1,
			Src:    spec.StateRegistration{Ptrs: []uint64{0x1000, 0x2000}, ItemLens: []uint64{8448, 8448}, LayerIDs: []int64{0, 4}},
			Dst:    spec.StateRegistration{Ptrs: []uint64{0x9000, 0xa000}, ItemLens: []uint64{8448, 8448}, LayerIDs: []int64{4, 0}},
			Index: &spec.IndexConfig{NumHiddenLayers: 8, Pattern: &pattern,
				Capacity: &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}},
		},
		Shapes: []Shape[spec.TransferStateLayerPairingInput]{
			{Name: "glm5-78-layers-same-order", Make: func() spec.TransferStateLayerPairingInput { return glm5State(1, false) }},
			{Name: "glm5-78-layers-shuffled-dst", Make: func() spec.TransferStateLayerPairingInput { return glm5State(1, true) }},
			{Name: "glm5-78-layers-pp4-stage", Make: func() spec.TransferStateLayerPairingInput { return glm5State(4, true) }},
		},
	}
}

// glm5State is a GLM-5-shaped registration: 78 layers with pattern
// FFF(SSSF)…, i.e. 21 active index layers plus one draft layer, K and V
// groups registered as two buffers each. With pp > 1 the prefill side holds
// one stage's contiguous share of the buffers; shuffle reorders decode's.
func glm5State(pp int, shuffle bool) spec.TransferStateLayerPairingInput {
	pattern := "FFF" + strings.Repeat("SSSF", 18) + "SSS"
	var ids []int64
	for range 2 {
		for l := range len(pattern) {
			if pattern[l] == 'F' {
				ids = append(ids, int64(l))
			}
		}
		ids = append(ids, spec.DraftLayerIDBase)
	}
	dst := registration(ids, 0x7f00_0000_0000)
	if shuffle {
		rng := rand.New(rand.NewPCG(7, 8))
		rng.Shuffle(len(ids), func(i, j int) {
			dst.Ptrs[i], dst.Ptrs[j] = dst.Ptrs[j], dst.Ptrs[i]
			dst.ItemLens[i], dst.ItemLens[j] = dst.ItemLens[j], dst.ItemLens[i]
			dst.LayerIDs[i], dst.LayerIDs[j] = dst.LayerIDs[j], dst.LayerIDs[i]
		})
	}
	stage := len(ids) / pp
	src := registration(ids[:stage], 0x7e00_0000_0000)
	return spec.TransferStateLayerPairingInput{PPSize: pp, Src: src, Dst: dst,
		Index: &spec.IndexConfig{NumHiddenLayers: int64(len(pattern)), Pattern: &pattern,
			Capacity: &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}}}
}

// registration lays buffers out back to back from base, 64 pages of 132
// bytes per token each.
func registration(ids []int64, base uint64) spec.StateRegistration {
	const itemLen = 64 * 132
	r := spec.StateRegistration{LayerIDs: append([]int64(nil), ids...)}
	for k := range ids {
		r.Ptrs = append(r.Ptrs, base+uint64(k)*itemLen*4096)
		r.ItemLens = append(r.ItemLens, itemLen)
	}
	return r
}
