package equiv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLoadScript is the differential spec of hicache.load_script (docs/spec/radix-acks.md
// §5.2): generated load scripts over small arenas (page lists contiguous,
// reversed, scattered, single-page and empty; ops repeating the previous
// op's indices; unavailable backends under both policies; misuse steps;
// ops the loader must refuse), the worked example, and D1–D6.
func HiCacheLoadScript() *Spec[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput] {
	valid, invalid := loadGenerators(Coverage{})
	return &Spec[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		Op:          catalog.HiCacheLoadScript(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  loadVocabulary(),
		Boundary:    loadBoundary(),
		Regressions: loadRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"index-layers-first-pair-descending": spec.ErrBadLoadPools,
			"index-layers-first-pair-repeated":   spec.ErrBadLoadPools,
		},
		Script: stepsOf(func(in *spec.HiCacheLoadScriptInput) *[]spec.LoadOp { return &in.Ops }),
		Props: []Prop[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
			{"D1-device-bytes-equal-per-token-copy", loadDeviceBytes},
			{"D2-one-build-per-prepared-op", loadOneBuild},
			{"D3-fresh-descriptor-per-op", loadFreshDescriptor},
			{"D4-closed-descriptor-refuses-every-use", loadClosedRefuses},
			{"D5-fallback-explicit-once-per-op", loadFallbackExplicit},
			{"D6-runs-expand-to-page-lists", loadRunsExpand},
			{"misuse-refused", loadMisuseRefused},
		},
	}
}

// loadMisuseKinds are hicache.load_script's step kinds: the misuse steps an
// op may carry (its regular begin, submits and end are not declarable:
// every load runs them).
func loadMisuseKinds() []string {
	return []string{spec.MisuseOtherOp, spec.MisuseSkipLayer, spec.MisuseEndEarly, spec.MisuseCancel, spec.MisuseReusePrevious}
}

// loadVocabulary is what an adapter may declare part of: the misuse kinds.
func loadVocabulary() *Vocabulary[spec.HiCacheLoadScriptInput] {
	kinds := loadMisuseKinds()
	return &Vocabulary[spec.HiCacheLoadScriptInput]{
		Steps: kinds,
		Uses: func(in spec.HiCacheLoadScriptInput) ([]string, []string) {
			return stepKinds(kinds, func(yield func(string) bool) {
				for _, op := range in.Ops {
					for _, m := range op.Misuse {
						if !yield(m.Kind) {
							return
						}
					}
				}
			}), nil
		},
		Generate: loadGenerators,
	}
}

// loadGenerators are hicache.load_script's generators under c.
func loadGenerators(c Coverage) (*rapid.Generator[spec.HiCacheLoadScriptInput], *rapid.Generator[Bad[spec.HiCacheLoadScriptInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.HiCacheLoadScriptInput { return loadSteps(t, 4, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.HiCacheLoadScriptInput] { return loadInvalid(t, c) })
}

// LoadSteps draws a load script of up to maxOps ops over arenas small
// enough that the output carries the device bytes.
func LoadSteps(t *rapid.T, maxOps int) spec.HiCacheLoadScriptInput {
	return loadSteps(t, maxOps, Coverage{})
}

// loadSteps is LoadSteps inside c: a misuse step of a kind c leaves out is
// drawn and dropped.
func loadSteps(t *rapid.T, maxOps int, c Coverage) spec.HiCacheLoadScriptInput {
	p := spec.LoadPools{
		Layers:    rapid.IntRange(1, 4).Draw(t, "layers"),
		HostSlots: rapid.SampledFrom([]int64{0, 8, 16, 24}).Draw(t, "host_slots"),
		DevSlots:  rapid.SampledFrom([]int64{0, 16, 24, 32}).Draw(t, "dev_slots"),
		KVBytes:   rapid.Int64Range(1, 3).Draw(t, "kv_bytes"),
	}
	if rapid.Bool().Draw(t, "index") {
		p.IndexBytes = rapid.Int64Range(1, 2).Draw(t, "index_bytes")
		for l := range p.Layers {
			if rapid.Bool().Draw(t, "index_layer") {
				p.IndexLayers = append(p.IndexLayers, l)
			}
		}
	}
	in := spec.HiCacheLoadScriptInput{Pools: p, Ops: []spec.LoadOp{}}
	n := rapid.IntRange(0, maxOps).Draw(t, "ops")
	for i := range n {
		in.Ops = append(in.Ops, drawLoadOp(t, p, in.Ops, uint64(i+1), c))
	}
	return in
}

// drawLoadOp draws one op: page lists of a drawn shape (or the previous
// op's indices again), a backend, misuse steps, and rarely a defect the
// loader must refuse.
func drawLoadOp(t *rapid.T, p spec.LoadPools, prev []spec.LoadOp, id uint64, c Coverage) spec.LoadOp {
	var op spec.LoadOp
	if len(prev) > 0 && rapid.IntRange(0, 4).Draw(t, "repeat") == 0 {
		last := prev[len(prev)-1]
		op = spec.LoadOp{HostIdx: last.HostIdx, DevIdx: last.DevIdx, PageSize: last.PageSize}
	} else {
		// 3 is the page size that is not a power of two: the fast loader
		// checks alignment and divides by it instead of masking and shifting.
		op.PageSize = rapid.SampledFrom([]int{1, 2, 4, 3}).Draw(t, "page_size")
		hp, dp := drawPages(t, p, op.PageSize)
		op.HostIdx, op.DevIdx = expandPages(hp, op.PageSize), expandPages(dp, op.PageSize)
	}
	op.OpID = id
	if rapid.IntRange(0, 3).Draw(t, "same_id") == 0 {
		op.OpID = 1
	}
	op.Unavailable = rapid.IntRange(0, 3).Draw(t, "unavailable") == 0
	op.Policy = rapid.SampledFrom([]spec.LoadPolicy{"", spec.LoadStrict, spec.LoadAllowFallback, spec.LoadAllowFallback}).Draw(t, "policy")
	for range rapid.IntRange(0, 2).Draw(t, "misuses") {
		m := spec.LoadMisuse{
			Kind: rapid.SampledFrom(loadMisuseKinds()).Draw(t, "misuse"),
			At:   rapid.IntRange(0, p.Layers).Draw(t, "at"),
		}
		if c.Step(m.Kind) {
			op.Misuse = append(op.Misuse, m)
		}
	}
	if rapid.IntRange(0, 7).Draw(t, "defect") == 0 {
		op = loadDefect(t, op)
	}
	return op
}

// drawPages draws distinct device pages and host pages (duplicates
// allowed) inside the pools, in one of the shapes D1 names.
func drawPages(t *rapid.T, p spec.LoadPools, ps int) (hp, dp []int64) {
	hostPages, devPages := int(p.HostSlots)/ps, int(p.DevSlots)/ps
	n := rapid.IntRange(0, min(hostPages, devPages, 8)).Draw(t, "pages")
	if n == 0 {
		return nil, nil
	}
	switch rapid.IntRange(0, 3).Draw(t, "shape") {
	case 0: // one contiguous run
		h0 := rapid.IntRange(0, hostPages-n).Draw(t, "h0")
		d0 := rapid.IntRange(0, devPages-n).Draw(t, "d0")
		for k := range n {
			hp, dp = append(hp, int64(h0+k)), append(dp, int64(d0+k))
		}
	case 1: // reversed: host ascending to device descending
		d0 := rapid.IntRange(0, devPages-n).Draw(t, "d0")
		for k := range n {
			hp, dp = append(hp, int64(k)), append(dp, int64(d0+n-1-k))
		}
	default: // scattered, host pages may repeat
		perm := rapid.Permutation(seq(devPages)).Draw(t, "dev_perm")
		for k := range n {
			hp = append(hp, int64(rapid.IntRange(0, hostPages-1).Draw(t, "hp")))
			dp = append(dp, int64(perm[k]))
		}
	}
	return hp, dp
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// expandPages turns page ids into the token slots of whole pages.
func expandPages(pages []int64, ps int) []spec.SlotIdx {
	idx := []spec.SlotIdx{}
	for _, pg := range pages {
		for j := range int64(ps) {
			idx = append(idx, pg*int64(ps)+j)
		}
	}
	return idx
}

// loadDefect breaks one op so that BeginLoad must refuse it.
func loadDefect(t *rapid.T, op spec.LoadOp) spec.LoadOp {
	op.HostIdx, op.DevIdx = slices.Clone(op.HostIdx), slices.Clone(op.DevIdx)
	op.PageSize = max(op.PageSize, 1) // a repeat of an earlier defective op
	switch rapid.IntRange(0, 5).Draw(t, "defect_kind") {
	case 0:
		op.PageSize = rapid.IntRange(-1, 0).Draw(t, "bad_page_size")
	case 1:
		op.DevIdx = append(op.DevIdx, 0)
	case 2:
		op.HostIdx = append(op.HostIdx, 1)
		op.DevIdx = append(op.DevIdx, 1)
	case 3:
		op.HostIdx = append(op.HostIdx, -int64(op.PageSize))
		op.DevIdx = append(op.DevIdx, expandPages([]int64{1 << 20}, op.PageSize)...)
		op.HostIdx = append(op.HostIdx, expandPages([]int64{0}, op.PageSize)[1:]...)
	case 4:
		if min(len(op.HostIdx), len(op.DevIdx)) >= op.PageSize {
			op.HostIdx = append(op.HostIdx, op.HostIdx[:op.PageSize]...)
			op.DevIdx = append(op.DevIdx, op.DevIdx[:op.PageSize]...)
		} else {
			op.Policy = "lenient"
		}
	default:
		op.Policy = "lenient"
	}
	return op
}

// loadInvalid draws a script inside c and breaks it once; a misuse step at
// a bad layer is of a kind c allows (cancel when it does), else the
// violation is an unknown misuse kind instead.
func loadInvalid(t *rapid.T, c Coverage) Bad[spec.HiCacheLoadScriptInput] {
	in := loadSteps(t, 2, c)
	violation := rapid.IntRange(0, 6).Draw(t, "violation")
	atKinds := c.Allowed([]string{spec.MisuseCancel, spec.MisuseOtherOp, spec.MisuseSkipLayer, spec.MisuseEndEarly, spec.MisuseReusePrevious})
	if violation == 6 && len(atKinds) == 0 {
		violation = 5
	}
	switch violation {
	case 0:
		in.Pools.Layers = rapid.IntRange(-1, 0).Draw(t, "bad_layers")
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrBadLoadPools}
	case 1:
		in.Pools.KVBytes = 0
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrBadLoadPools}
	case 2:
		in.Pools.DevSlots = rapid.Int64Range(-8, -1).Draw(t, "bad_dev_slots")
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrNegative}
	case 3:
		in.Pools.IndexBytes, in.Pools.IndexLayers = 1, []int{in.Pools.Layers}
		if rapid.Bool().Draw(t, "first_pair") {
			in.Pools.IndexLayers = firstPairOutOfOrder(t, in.Pools.Layers)
		}
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrBadLoadPools}
	case 4:
		in.Pools.HostSlots = 1 << 40
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrTooLarge}
	case 5:
		in.Ops = append(in.Ops, spec.LoadOp{OpID: 9, PageSize: 1, Misuse: []spec.LoadMisuse{{Kind: "double_free"}}})
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrBadEnum}
	default:
		at := rapid.SampledFrom([]int{-1, in.Pools.Layers + 1}).Draw(t, "bad_at")
		in.Ops = append(in.Ops, spec.LoadOp{OpID: 9, PageSize: 1, Misuse: []spec.LoadMisuse{{Kind: atKinds[0], At: at}}})
		return Bad[spec.HiCacheLoadScriptInput]{in, spec.ErrLayerOutOfOrder}
	}
}

// firstPair is three-layer pools whose index layers are layers.
func firstPair(layers ...int) spec.LoadPools {
	return spec.LoadPools{Layers: 3, HostSlots: 8, DevSlots: 8, KVBytes: 1, IndexBytes: 1, IndexLayers: layers}
}

// firstPairOutOfOrder is index layers in [0, layers) out of order only in
// their first pair (the second repeats or precedes the first), the rest
// ascending: a short list's first pair, a reach class of issue 30.
func firstPairOutOfOrder(t *rapid.T, layers int) []int {
	l0 := rapid.IntRange(0, layers-1).Draw(t, "first_layer")
	l := []int{l0, rapid.IntRange(0, l0).Draw(t, "second_layer")}
	for x := l0 + 1; x < layers; x++ {
		if rapid.Bool().Draw(t, "later_layer") {
			l = append(l, x)
		}
	}
	return l
}

// loadOp builds an op from page lists at page size ps.
func loadOp(id uint64, ps int, hp, dp []int64) spec.LoadOp {
	return spec.LoadOp{OpID: id, PageSize: ps, HostIdx: expandPages(hp, ps), DevIdx: expandPages(dp, ps)}
}

func loadBoundary() []Case[spec.HiCacheLoadScriptInput] {
	worked := catalog.LoadWorkedExample()
	bad := worked
	bad.Ops = []spec.LoadOp{
		loadOp(1, 4, []int64{2, 3}, []int64{10, 10}),                                                        // §5.2: duplicate destination
		{OpID: 2, PageSize: 4, HostIdx: []spec.SlotIdx{1, 2, 3, 4}, DevIdx: []spec.SlotIdx{40, 41, 42, 43}}, // 1 % 4 != 0
		loadOp(3, 4, []int64{0, 0}, []int64{10, 11}),                                                        // duplicate host pages are allowed
	}
	pools := spec.LoadPools{Layers: 2, HostSlots: 8, DevSlots: 8, KVBytes: 2, IndexBytes: 1, IndexLayers: []int{0}}
	misuse := spec.HiCacheLoadScriptInput{Pools: pools, Ops: []spec.LoadOp{
		loadOp(1, 1, []int64{0, 1}, []int64{4, 5}),
		loadOp(2, 1, []int64{2}, []int64{6}),
	}}
	misuse.Ops[1].Misuse = []spec.LoadMisuse{{Kind: spec.MisuseOtherOp, At: 0}, {Kind: spec.MisuseSkipLayer, At: 0}, {Kind: spec.MisuseEndEarly, At: 1}, {Kind: spec.MisuseReusePrevious, At: 1}, {Kind: spec.MisuseEndEarly, At: 2}}
	cancel := spec.HiCacheLoadScriptInput{Pools: pools, Ops: []spec.LoadOp{loadOp(1, 1, []int64{7, 6, 5}, []int64{0, 1, 2})}}
	cancel.Ops[0].Misuse = []spec.LoadMisuse{{Kind: spec.MisuseCancel, At: 1}, {Kind: spec.MisuseEndEarly, At: 1}}
	one := spec.LoadPools{Layers: 1, HostSlots: 4, DevSlots: 4, KVBytes: 1}
	return []Case[spec.HiCacheLoadScriptInput]{
		{"worked-example-page-size-4", worked},
		{"worked-example-refusals", bad},
		{"misuse-other-op-skip-end-early-reuse", misuse},
		{"cancel-after-one-layer-reversed", cancel},
		{"single-layer-single-page", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{loadOp(1, 1, []int64{3}, []int64{0})}}},
		{"empty-op-and-empty-pools", spec.HiCacheLoadScriptInput{Pools: spec.LoadPools{Layers: 1, KVBytes: 1}, Ops: []spec.LoadOp{{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{}, DevIdx: []spec.SlotIdx{}}}}},
		{"same-indices-two-ops-fresh-descriptors", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{loadOp(1, 2, []int64{1}, []int64{0}), loadOp(2, 2, []int64{1}, []int64{0})}}},
		{"strict-unavailable-refused", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{0}, DevIdx: []spec.SlotIdx{1}, Unavailable: true}}}},
		{"page-outside-the-pool", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{loadOp(1, 2, []int64{0}, []int64{2})}}},
		// Index layers out of order in their first pair only (a reach class
		// of issue 30): refused at index_layers[1].
		{"index-layers-first-pair-descending", spec.HiCacheLoadScriptInput{Pools: firstPair(1, 0, 2), Ops: []spec.LoadOp{}}},
		{"index-layers-first-pair-repeated", spec.HiCacheLoadScriptInput{Pools: firstPair(0, 0), Ops: []spec.LoadOp{}}},
		// §5.2's BeginLoad failure paths not pinned above, each once
		// (generated defects reach them only on some seeds): unequal lengths,
		// a partial page, a page whose slots do not step by one, page size 0,
		// a negative slot, an unknown policy, and an allow_fallback op whose
		// indices are refused (no fallback event is recorded).
		{"length-mismatch-not-page-contiguous", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{0, 1}, DevIdx: []spec.SlotIdx{0}}}}},
		{"partial-page-not-page-contiguous", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 2, HostIdx: []spec.SlotIdx{0, 1, 2}, DevIdx: []spec.SlotIdx{0, 1, 2}}}}},
		{"page-slots-not-contiguous", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 2, HostIdx: []spec.SlotIdx{0, 1}, DevIdx: []spec.SlotIdx{2, 0}}}}},
		{"page-size-zero-refused", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 0, HostIdx: []spec.SlotIdx{}, DevIdx: []spec.SlotIdx{}}}}},
		{"negative-slot-refused", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{-1}, DevIdx: []spec.SlotIdx{0}}}}},
		{"unknown-policy-refused", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{0}, DevIdx: []spec.SlotIdx{1}, Unavailable: true, Policy: "lenient"}}}},
		{"refused-fallback-op-records-no-event", spec.HiCacheLoadScriptInput{Pools: one, Ops: []spec.LoadOp{
			{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{0, 1}, DevIdx: []spec.SlotIdx{2, 2}, Unavailable: true, Policy: spec.LoadAllowFallback}}}},
		// A page size that is not a power of two: two adjacent pages merge
		// into one run, and a page starting at slot 1 is refused as
		// misaligned (1 % 3 != 0).
		{"page-size-3-run-and-misaligned-page", spec.HiCacheLoadScriptInput{Pools: spec.LoadPools{Layers: 2, HostSlots: 12, DevSlots: 12, KVBytes: 1}, Ops: []spec.LoadOp{
			loadOp(1, 3, []int64{0, 1}, []int64{2, 3}),
			{OpID: 2, PageSize: 3, HostIdx: []spec.SlotIdx{1, 2, 3}, DevIdx: []spec.SlotIdx{0, 1, 2}}}}},
	}
}

func loadRegressions() []Case[spec.HiCacheLoadScriptInput] {
	// §5.4 B5.a: L = 3 layers, Builds = 3 (buggy) versus 1.
	rebuilt := catalog.LoadWorkedExample()
	// §5.4 B5.b: batch 1 loads host page 0 → device page 5, batch 2 host
	// page 1 → device page 6; the reused descriptor copies page 0 to 5 again.
	pools := spec.LoadPools{Layers: 2, HostSlots: 4, DevSlots: 8, KVBytes: 2}
	reused := spec.HiCacheLoadScriptInput{Pools: pools, Ops: []spec.LoadOp{loadOp(1, 1, []int64{0}, []int64{5}), loadOp(2, 1, []int64{1}, []int64{6})}}
	// §5.4 B5.d: an unavailable backend under allow_fallback (fixed: one
	// event) and under strict (fixed: refused).
	silent := spec.HiCacheLoadScriptInput{Pools: pools, Ops: []spec.LoadOp{loadOp(1, 1, []int64{0}, []int64{5}), loadOp(2, 1, []int64{1}, []int64{6})}}
	silent.Ops[0].Unavailable, silent.Ops[0].Policy = true, spec.LoadAllowFallback
	silent.Ops[1].Unavailable = true
	return []Case[spec.HiCacheLoadScriptInput]{
		{"descriptor-rebuilt-per-layer", rebuilt},
		{"descriptor-reused-across-batches", reused},
		{"silent-fallback", silent},
	}
}

// LoadModelDevice is D1's model: the device arena after copying, for every
// layer each op submitted, token by token, host slot HostIdx[i] of every
// buffer kind to device slot DevIdx[i] — no pages, no runs.
func LoadModelDevice(in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) (*spec.LoadArena, error) {
	a, err := ref.NewLoadArena(spec.DefaultLimits(), in.Pools)
	if err != nil {
		return nil, err
	}
	p := in.Pools
	for i, op := range in.Ops {
		for l := range out.Trace[i].Layers {
			s, indexed := p.IndexSlot(l)
			for j, h := range op.HostIdx {
				d := op.DevIdx[j]
				copy(a.DevKV[l][d*p.KVBytes:(d+1)*p.KVBytes], a.HostKV[l][h*p.KVBytes:(h+1)*p.KVBytes])
				if indexed {
					copy(a.DevIndex[s][d*p.IndexBytes:(d+1)*p.IndexBytes], a.HostIndex[s][h*p.IndexBytes:(h+1)*p.IndexBytes])
				}
			}
		}
	}
	return a, nil
}

// loadDeviceBytes is D1: the device bytes equal the per-token model's.
func loadDeviceBytes(_ spec.Limits, in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	if len(out.Trace) != len(in.Ops) {
		return fmt.Errorf("%d results for %d ops", len(out.Trace), len(in.Ops))
	}
	a, err := LoadModelDevice(in, out)
	if err != nil {
		return err
	}
	h := sha256.New()
	for _, b := range append(slices.Clone(a.DevKV), a.DevIndex...) {
		h.Write(b)
	}
	if got, want := out.Device.SHA256, hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("device sha256 %s, the per-token copy gives %s", got, want)
	}
	for l, b := range out.Device.KV {
		if !bytes.Equal(b, a.DevKV[l]) {
			return fmt.Errorf("device KV layer %d is %x, the per-token copy gives %x", l, b, a.DevKV[l])
		}
	}
	for s, b := range out.Device.Index {
		if !bytes.Equal(b, a.DevIndex[s]) {
			return fmt.Errorf("device index slot %d is %x, the per-token copy gives %x", s, b, a.DevIndex[s])
		}
	}
	return nil
}

// loadOneBuild is D2: a prepared op builds its page lists once for any L;
// the fallback path rebuilds them at every submitted layer.
func loadOneBuild(_ spec.Limits, in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	for i, r := range out.Trace {
		if r.BeginError != nil {
			continue
		}
		want := 1
		if r.Fallback {
			want = r.Layers
		}
		if r.Builds != want {
			return fmt.Errorf("op %d (fallback %v, %d of %d layers): %d builds, want %d", i, r.Fallback, r.Layers, in.Pools.Layers, r.Builds, want)
		}
	}
	return nil
}

// loadFreshDescriptor is D3: every begun op gets a descriptor no earlier op
// had, even with the previous op's indices, and a previous op's descriptor
// refuses this op's layers.
func loadFreshDescriptor(_ spec.Limits, _ spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	serial := 0
	for i, r := range out.Trace {
		if r.BeginError != nil {
			continue
		}
		if serial++; r.Descriptor != serial {
			return fmt.Errorf("op %d has descriptor %d, want fresh descriptor %d", i, r.Descriptor, serial)
		}
		for _, m := range r.Misuse {
			if m.Kind == spec.MisuseReusePrevious && !m.NoTarget && (m.Error == nil || m.Error.Code != spec.ErrDescriptorClosed.Code()) {
				return fmt.Errorf("op %d: the previous op's descriptor was not refused: %+v", i, m.Error)
			}
		}
	}
	return nil
}

// loadClosedRefuses is D4: after EndLoad (or Cancel) a submit, an EndLoad
// and a Cancel are all refused as closed; an op that never closed has no
// probes.
func loadClosedRefuses(_ spec.Limits, _ spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	for i, r := range out.Trace {
		closed := r.BeginError == nil && r.EndError == nil
		if !closed {
			if len(r.AfterEnd) != 0 {
				return fmt.Errorf("op %d never closed but has after-end probes", i)
			}
			continue
		}
		if len(r.AfterEnd) != 3 {
			return fmt.Errorf("op %d closed with %d after-end probes, want 3", i, len(r.AfterEnd))
		}
		for _, e := range r.AfterEnd {
			if e.Code != spec.ErrDescriptorClosed.Code() {
				return fmt.Errorf("op %d: a use after close gave %q, want %q", i, e.Code, spec.ErrDescriptorClosed.Code())
			}
		}
	}
	return nil
}

// loadFallbackExplicit is D5: under strict an unavailable backend refuses
// the op (0 events); under allow_fallback each such op that begins records
// exactly one event and runs the fallback path; available backends never
// fall back.
func loadFallbackExplicit(_ spec.Limits, in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	want := []spec.FallbackEvent{}
	for i, op := range in.Ops {
		r := out.Trace[i]
		validPolicy := op.Policy == "" || op.Policy == spec.LoadStrict || op.Policy == spec.LoadAllowFallback
		if op.Unavailable && validPolicy && op.Policy != spec.LoadAllowFallback &&
			(r.BeginError == nil || r.BeginError.Code != spec.ErrPreparedUnavailable.Code()) {
			return fmt.Errorf("op %d: strict with an unavailable backend was not refused: %+v", i, r.BeginError)
		}
		if r.BeginError != nil {
			continue
		}
		fallback := op.Unavailable && op.Policy == spec.LoadAllowFallback
		if r.Fallback != fallback {
			return fmt.Errorf("op %d: fallback %v, want %v", i, r.Fallback, fallback)
		}
		if fallback {
			want = append(want, spec.FallbackEvent{OpID: op.OpID, Reason: spec.FallbackReasonUnavailable})
		}
	}
	if !slices.Equal(out.Fallbacks, want) {
		return fmt.Errorf("fallback log %v, want %v", out.Fallbacks, want)
	}
	return nil
}

// loadRunsExpand is D6: the runs of a begun op cover len(host_idx)/ps pages,
// expand to its page lists in caller order, and are maximal.
func loadRunsExpand(_ spec.Limits, in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	for i, op := range in.Ops {
		r := out.Trace[i]
		if r.BeginError != nil {
			continue
		}
		var hp, dp []int64
		for k := 0; k < len(op.HostIdx); k += op.PageSize {
			hp, dp = append(hp, op.HostIdx[k]/int64(op.PageSize)), append(dp, op.DevIdx[k]/int64(op.PageSize))
		}
		var eh, ed []int64
		for j, run := range r.Runs {
			for c := range run.Count {
				eh, ed = append(eh, run.SrcStart+c), append(ed, run.DstStart+c)
			}
			if j > 0 {
				if prev := r.Runs[j-1]; prev.SrcStart+prev.Count == run.SrcStart && prev.DstStart+prev.Count == run.DstStart {
					return fmt.Errorf("op %d: runs %d and %d would join", i, j-1, j)
				}
			}
		}
		if !slices.Equal(eh, hp) || !slices.Equal(ed, dp) {
			return fmt.Errorf("op %d: runs %v expand to (%v, %v), want (%v, %v)", i, r.Runs, eh, ed, hp, dp)
		}
	}
	return nil
}

// loadMisuseRefused checks the lifecycle on the trace (§5.2): another op
// id, a skipped layer and an early end are refused with their sentinels,
// cancel and an end after the last layer close the op, and the op submits
// every layer unless closed early.
func loadMisuseRefused(_ spec.Limits, in spec.HiCacheLoadScriptInput, out spec.HiCacheLoadScriptOutput) error {
	L := in.Pools.Layers
	for i, r := range out.Trace {
		if r.BeginError != nil {
			continue
		}
		stop := L
		for _, m := range r.Misuse {
			want := ""
			switch m.Kind {
			case spec.MisuseOtherOp:
				want = spec.ErrDescriptorOpMismatch.Code()
			case spec.MisuseSkipLayer:
				want = spec.ErrLayerOutOfOrder.Code()
			case spec.MisuseEndEarly:
				if m.At < L {
					want = spec.ErrEndBeforeComplete.Code()
				}
			case spec.MisuseReusePrevious:
				continue
			}
			if got := errCode(m.Error); got != want {
				return fmt.Errorf("op %d: misuse %s at %d gave %q, want %q", i, m.Kind, m.At, got, want)
			}
			if want == "" {
				stop = min(stop, m.At)
			}
		}
		if r.Layers != stop || r.SubmitError != nil {
			return fmt.Errorf("op %d submitted %d layers (error %+v), want %d", i, r.Layers, r.SubmitError, stop)
		}
	}
	return nil
}

func errCode(e *spec.ErrorObject) string {
	if e == nil {
		return ""
	}
	return e.Code
}
