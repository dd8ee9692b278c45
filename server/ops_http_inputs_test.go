package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// This file builds, for every op, one valid input over 64 KiB: what the
// issue's "HTTP over in-process ≤ 3× on inputs over 64 KiB" is measured on
// (BenchmarkOpsHTTPOverInProcessLarge). Where the catalog has a benchmark
// shape of the right size it is used as is; where its shapes are too small
// or far too large, the shape (or the catalog's exported shape builder) is
// scaled, or a small builder below makes one of the same kind. An op whose
// input type cannot encode to more than 64 KiB has no builder: its bound
// is computed from the type (fixedJSONBound).

// largeInputMin is the threshold: the ratio target applies to
// inputs over 64 KiB, so every large input must be longer than this.
const largeInputMin = 64 << 10

// largeInputs maps an op name to the builder of its large input (a value of
// the op's input type, encoded by largeInputJSON). Sizes aim at 128 KiB to
// 1 MiB: large enough that HTTP's fixed cost per request is amortised as it
// would be on real payloads, small enough to stay far inside the server's
// default body and output limits and to build in milliseconds.
var largeInputs = map[string]func() any{
	"admission.bench": func() any {
		// The catalog shape asks for MaxBenchRounds rounds, whose output
		// bound (512 B a round) is past the server's ratio limit for a
		// 100 KiB request; 1000 rounds are far more than 1000 requests need.
		in := shapeInput(catalog.AdmissionBench(), "1000-requests-cp-buffer-gate")
		in.MaxRounds = 1000
		return in
	},
	"admission.estimate": func() any {
		in := shapeInput(catalog.AdmissionEstimate(), "cp8-bs64-high-hit")
		in.Requests = repeated(in.Requests, 64) // 4096 requests
		return in
	},
	"admission.round":  func() any { return catalog.AdmissionQueue(1000, false) },
	"admission.script": func() any { return shapeInput(catalog.AdmissionScript(), "16-rounds-of-64") },
	"config.index_topk_overrides": func() any {
		in := shapeInput(catalog.ConfigIndexTopKOverrides(), "glm5-pattern-256-key-override")
		in.JSON = launchOverride(2048)
		return in
	},
	"cp.can_split": func() any { return canSplitBatch(8192) },
	"cp.compact_valid": func() any {
		sp, lay := cpRowsLayout()
		return spec.CPCompactValidInput{Layout: sp, Rank: 1, X: mlaRows(lay.R(1), 1)}
	},
	"cp.draft_input": func() any {
		const w = 256
		sp, lay := cpRowsLayout()
		draft := catalog.SeededRows(w, lay.R(1), 2)
		return spec.CPDraftInputInput{Layout: &sp, Rank: 1, Hidden: catalog.SeededRows(w, lay.TotalValid(), 3),
			HiddenContract: spec.DraftGlobalValid, DraftHidden: &draft}
	},
	"cp.page_descriptors": func() any {
		// The shape's ten page windows twice over: a batch of 20 rows
		// sharing the prefix pages.
		in := shapeInput(catalog.CPPageDescriptors(), "bs10-100K-tokens-ps64-shared-prefix")
		in.Pages = repeated(in.Pages, 2)
		return in
	},
	"cp.remap_locs": func() any {
		// The shape's page windows (bs=10, 100K tokens, 64-token pages)
		// with every 32nd token of each row, rows in order: the shape
		// itself flattens all 1M tokens (9 MiB of JSON).
		const ps, tokens, stride = 64, 100_000, 32
		in := spec.CPRemapLocsInput{PageSize: ps, Pages: shapeInput(catalog.CPPageDescriptors(), "bs10-100K-tokens-ps64-shared-prefix").Pages}
		for b, row := range in.Pages {
			for t := int64(0); t < tokens; t += stride {
				in.Locs, in.RowIDs = append(in.Locs, row[t/ps]*ps+t%ps), append(in.RowIDs, int32(b))
			}
		}
		return in
	},
	"cp.rerange": func() any {
		sp, lay := cpRowsLayout()
		m := 0
		for r := range lay.CP {
			m = max(m, lay.R(r))
		}
		return spec.CPRerangeInput{Layout: sp, G: mlaRows(lay.CP*m, 4), M: m, Src: spec.SrcCompute}
	},
	"cp.restore_padded": func() any {
		sp, lay := cpRowsLayout()
		return spec.CPRestorePaddedInput{Layout: sp, Rank: 1, Y: mlaRows(lay.Rv(1), 5)}
	},
	"cp.split": func() any {
		sp, lay := cpRowsLayout()
		return spec.CPSplitInput{Layout: sp, X: mlaRows(lay.TotalValid(), 6), Pad: make([]byte, spec.FP8RowBytes), Prefix: make([]int64, lay.B())}
	},
	"cp.valid_rows": func() any {
		sp, lay := cpRowsLayout()
		return spec.CPValidRowsInput{Layout: sp, Rank: 1, X: mlaRows(lay.R(1), 7)}
	},
	"deepgemm.warmup_plan": func() any { return catalog.DeepGEMMRestart(128) },
	"fp8.compose_current":  func() any { return composeBatch(2, 64, 32) },
	"fp8.dequant_topk": func() any {
		const rows = 256
		topk := make([][]int32, 16)
		for q := range topk {
			for j := range 64 {
				topk[q] = append(topk[q], int32((q*64+j)*7%rows))
			}
		}
		return spec.FP8DequantTopKInput{Kq: quantizedRows(rows), TopK: topk}
	},
	"fp8.materialize_pages": func() any {
		return spec.FP8MaterializePagesInput{Pool: fp8Pool(16, 256), Slots: everyOtherPage(16, 8)}
	},
	"fp8.quantize_index_k": func() any {
		return spec.FP8QuantizeIndexKInput{X: catalog.BF16BenchRows(spec.IndexKBF16RowBytes, 1024)}
	},
	"fp8.quantize_row": func() any {
		return spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: catalog.BF16BenchRows(spec.MLABF16RowBytes, 256)}
	},
	"fp8.store_pages": func() any {
		return spec.FP8StorePagesInput{Pool: fp8Pool(16, 256), Locs: everyOtherPage(16, 2), Rows: mlaRows(32, 8)}
	},
	"fp8.store_valid_rows": func() any { return storeValidBatch([]int{64, 64}) },
	"hicache.ack_script": func() any {
		return shapeInput(catalog.HiCacheAckScript(), "fresh-reserves-over-1024-queued")
	},
	"hicache.layer_done_script": func() any {
		// The shape is three load ops over 79 layers, one per ring slot;
		// eight times over is 24 ops, the ring cycling as it would.
		in := shapeInput(catalog.HiCacheLayerDoneScript(), "79-layers-3-ops-ready-per-layer")
		in.Steps = repeated(in.Steps, 8)
		return in
	},
	// 2560 pages: the host and device arenas (7680 pages of 4 slots at 520
	// B a slot) stay under the server's 16 MiB output floor.
	"hicache.load_script": func() any { return catalog.LoadBenchScript(61, 2560, 64) },
	"kvev.apply": func() any {
		// The shape's first quarter: 16 of its 64 requests stored, 8 blocks
		// a message, the early ones removed again (888 KiB in all).
		in := shapeInput(catalog.KVEvApply(), "ingest-4096-blocks-8-per-batch-with-removals")
		in.Steps = in.Steps[:len(in.Steps)/4]
		return in
	},
	"kvev.snapshot": func() any {
		// kvev.apply's large script, snapshotted at its end.
		in := shapeInput(catalog.KVEvApply(), "ingest-4096-blocks-8-per-batch-with-removals")
		return spec.KVEvSnapshotInput{Config: in.Config, Streams: in.Streams, Steps: in.Steps[:len(in.Steps)/4], Covers: 7}
	},
	"kvev.decode":         func() any { return shapeInput(catalog.KVEvDecode(), "stored-4096-blocks-x16-tokens") },
	"layout.convert":      func() any { return relayoutPool(4, 4, 16, 1152) },
	"layout.host_offsets": func() any { return shapeInput(catalog.LayoutHostOffsets(), "4096-points-pfd-mla") },
	"mqa.chunk_rows": func() any {
		in := shapeInput(catalog.MQAChunkRows(), "cp8-bs64-padded-runtime")
		for i := range 8192 {
			in.Shapes = append(in.Shapes, spec.MQALogitsShape{Q: int64(1 + i*37%65536), K: int64(1024 + i*7919%131072)})
		}
		return in
	},
	"mqa.chunked_topk":  func() any { return topkLogits(32, 1024, 64) },
	"nsa.index_plan":    func() any { return shapeInput(catalog.NSAIndexPlan(), "4096-layers-forward-pass") },
	"radix.bigram_key":  func() any { return shapeInput(catalog.RadixBigramKey(), "64K-tokens") },
	"radix.page_hashes": func() any { return shapeInput(catalog.RadixPageHashes(), "64K-tokens-bigram") },
	"radix.script":      func() any { return shapeInput(catalog.RadixScript(), "8K-tokens-16-node-path-full-hit") },
	"sampling.pack": func() any {
		in := shapeInput(catalog.SamplingPack(), "bs200")
		in.Requests = repeated(in.Requests, 16) // a 3200-request decode batch
		return in
	},
	"serving.chat_normalize": func() any {
		in := shapeInput(catalog.ServingChatNormalize(), "32KB-tools-flags-on")
		in.Request = longerChat(in.Request, 8)
		return in
	},
	"serving.error_body": func() any {
		in := shapeInput(catalog.ServingErrorBody(), "stream-413-unicode")
		in.Message = strings.Repeat(in.Message+` "quoted" <&> `, 1280)
		return in
	},
	"serving.glm_tool_args": func() any {
		in := catalog.ServingGLMToolArgs().Sample
		in.Text = strings.Repeat(in.Text, 1024)
		return in
	},
	"serving.stream_error_chunk": func() any {
		in := shapeInput(catalog.ServingStreamErrorChunk(), "normal-chunk-first-preflight")
		in.Chunk = `{"id":"c","choices":[{"index":0,"delta":{"content":"` + strings.Repeat(`lorem ipsum \"dolor\" é `, 6000) + `"}}]}`
		return in
	},
	"serving.usage": func() any {
		in := shapeInput(catalog.ServingUsage(), "glm-merge-4-choices")
		in.Choices = repeated(in.Choices, 2048)
		return in
	},
	"transfer.filter_cp_rank": func() any {
		in := shapeInput(catalog.TransferFilterCPRank(), "1024-pages-shuffled")
		in.KV = shuffledPages(5000, 32<<10)
		return in
	},
	"transfer.group_contiguous": func() any {
		// The first 16K pairs of the 1M-pair shape: the same run mix.
		in := shapeInput(catalog.TransferGroupContiguous(), "1M-pairs-runs-1-64")
		in.Src, in.Dst = in.Src[:16<<10], in.Dst[:16<<10]
		return in
	},
	"transfer.layer_blocks":     func() any { return mlaLayerBlocks(79, 16<<10) },
	"transfer.per_layer_script": func() any { return perLayerForward(79, 78, 8, 64, 192) },
	"transfer.prebuilt_slice": func() any {
		in := shapeInput(catalog.TransferPrebuiltSlice(), "32-reqs-2k-prefix-2k-suffix")
		in.Requests = in.Requests[:8]
		total := int64(0)
		for _, r := range in.Requests {
			total += r.ExtendLen
		}
		in.ExtendNumTokens = &total
		return in
	},
	"transfer.state_layer_pairing": func() any { return stateRegistrations(4096) },
}

// largeInputJSON returns op's large input as canonical JSON, or, for an op
// without a builder, why none can exist: its input type's size bound. An
// op with neither is an error, so a new op cannot silently go unmeasured.
func largeInputJSON(e catalog.Entry) (in []byte, whyNone string, err error) {
	if build, ok := largeInputs[e.Name()]; ok {
		in, err := catalog.Marshal(build())
		return in, "", err
	}
	t := inputType(e)
	if n, ok := fixedJSONBound(t); ok && n <= largeInputMin {
		return nil, fmt.Sprintf("%s takes %s, whose fields are all fixed-size (numbers, bools): its canonical JSON is at most %d B, not over %d KiB",
			e.Name(), t, n, largeInputMin>>10), nil
	}
	return nil, "", fmt.Errorf("%s: no large input builder in largeInputs, though its input %s can encode to over %d KiB", e.Name(), t, largeInputMin>>10)
}

// inputType is the Go type of e's input, read from its typed registration
// (*catalog.Op[In, Out]'s Sample field), which every catalog entry is.
func inputType(e catalog.Entry) reflect.Type {
	return reflect.ValueOf(e).Elem().FieldByName("Sample").Type()
}

// maxNumberJSON is the longest number encoding/json writes: a float64 such
// as -1.2345678901234567e-308 (an int64 needs at most 20 bytes).
const maxNumberJSON = 24

// fixedJSONBound is an upper bound on the canonical JSON of any value of t,
// and whether t has one: only numbers, bools, fixed arrays, pointers to
// such and structs of such do. Strings, slices, maps, interfaces and types
// that encode themselves are unbounded (ok false). Field names are counted
// as written, with their quotes, colon and comma.
func fixedJSONBound(t reflect.Type) (n int, ok bool) {
	marshaler := reflect.TypeFor[json.Marshaler]()
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		return 0, false
	}
	switch t.Kind() {
	case reflect.Bool:
		return len("false"), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return maxNumberJSON, true
	case reflect.Pointer:
		n, ok := fixedJSONBound(t.Elem())
		return max(n, len("null")), ok
	case reflect.Array:
		n, ok := fixedJSONBound(t.Elem())
		return len("[]") + t.Len()*(n+1), ok
	case reflect.Struct:
		total := len("{}")
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			n, ok := fixedJSONBound(f.Type)
			if !ok {
				return 0, false
			}
			total += len(`"":,`) + len(name) + n
		}
		return total, true
	}
	return 0, false
}

// shapeInput is the input of op's benchmark shape name, built by the
// catalog's own shape builder (what `kvtwin bench` measures).
func shapeInput[In, Out any](op *catalog.Op[In, Out], name string) In {
	for _, sh := range op.Shapes {
		if sh.Name == name {
			return sh.Make()
		}
	}
	panic(fmt.Sprintf("%s has no benchmark shape %q", op.OpName, name))
}

// repeated is xs n times over, for scaling a list whose elements are
// independent (requests of a batch, choices, steps of a cycle).
func repeated[T any](xs []T, n int) []T {
	out := make([]T, 0, len(xs)*n)
	for range n {
		out = append(out, xs...)
	}
	return out
}

// cpRowsLayout is the CP row ops' layout: three requests (100, 150 and 125
// tokens) split over cp=2 with 16-token granules, so every rank holds
// interleaved padding; with 656-byte rows a rank's rows are about 170 KiB
// of JSON and the whole batch about 320 KiB.
func cpRowsLayout() (spec.LayoutSpec, spec.Layout) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{100, 150, 125}, Granule: 16}
	lay, err := sp.Build()
	if err != nil {
		panic(err)
	}
	return sp, lay
}

// mlaRows is n deterministic 656-byte FP8 MLA rows (the row the CP ops
// move in production), distinct per seed.
func mlaRows(n int, seed uint32) spec.Rows { return catalog.SeededRows(spec.FP8RowBytes, n, seed) }

// quantizedRows is n real FP8 rows: bf16 activations quantized by the fast
// twin, so their codes and scales are what a cache holds.
func quantizedRows(n int) spec.Rows {
	out, err := catalog.FP8QuantizeRow().Fast(spec.DefaultLimits(),
		spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: catalog.BF16BenchRows(spec.MLABF16RowBytes, n)})
	if err != nil {
		panic(err)
	}
	return out.Rows
}

// fp8Pool is a page-slot pool of page size ps and capacity size: size+ps
// rows, page 0 being the padding page.
func fp8Pool(ps, size int64) spec.FP8Pool {
	return spec.FP8Pool{PageSize: ps, Size: size, Rows: mlaRows(int(size+ps), 9)}
}

// everyOtherPage lists the slots of pages pages 1, 3, 5, … of page size ps.
func everyOtherPage(ps int64, pages int) []int64 {
	var slots []int64
	for p := range int64(pages) {
		for s := range ps {
			slots = append(slots, (1+2*p)*ps+s)
		}
	}
	return slots
}

// slotRun returns the n slots from *at on and moves *at past them.
func slotRun(at *int64, n int) []int64 {
	slots := make([]int64, n)
	for i := range slots {
		slots[i] = *at + int64(i)
	}
	*at += int64(n)
	return slots
}

// composeBatch is fp8.compose_current on bs requests of p prefix and l
// current tokens each (page size 16), every request owning a contiguous
// span of the pool after the padding page, current rows in global order.
func composeBatch(bs, p, l int) spec.FP8ComposeCurrentInput {
	const ps = 16
	in := spec.FP8ComposeCurrentInput{Contract: spec.ContractGlobalValid, Current: catalog.BF16BenchRows(spec.MLABF16RowBytes, bs*l)}
	at := int64(ps)
	for range bs {
		in.PrefixSlots = append(in.PrefixSlots, slotRun(&at, p))
		in.CurrentSlots = append(in.CurrentSlots, slotRun(&at, l))
		in.Lens = append(in.Lens, l)
	}
	in.Pool = fp8Pool(ps, at-ps)
	return in
}

// storeValidBatch is rank 0's cache write of an unpadded cp=2 prefill of
// lens tokens (page size 16, no prefix): each request's tokens at
// contiguous slots after the padding page.
func storeValidBatch(lens []int) spec.FP8StoreValidRowsInput {
	const ps = 16
	sp := spec.LayoutSpec{CP: 2, Lens: lens}
	lay, err := sp.Build()
	if err != nil {
		panic(err)
	}
	in := spec.FP8StoreValidRowsInput{Layout: sp, Rank: 0, X: catalog.BF16BenchRows(spec.MLABF16RowBytes, lay.R(0))}
	at := int64(ps)
	for _, l := range lens {
		in.ReqToToken = append(in.ReqToToken, slotRun(&at, l))
		in.PrefixLens = append(in.PrefixLens, 0)
	}
	in.Pool = fp8Pool(ps, at-ps)
	return in
}

// canSplitBatch is an eligible shared-KV CP extend (cp=8, page 64) of bs
// requests of 4K–8K tokens behind page-aligned prefixes.
func canSplitBatch(bs int) spec.CPCanSplitInput {
	in := spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 8, UsesCPSharedKV: true, BatchSize: bs, PageSize: 64}
	for i := range bs {
		e, p := 4096+(i*37)%4096, 64*(i%4)
		in.ExtendLens, in.PrefixLens, in.SeqLens = append(in.ExtendLens, e), append(in.PrefixLens, p), append(in.SeqLens, p+e)
	}
	return in
}

// launchOverride is a --json-model-override-args object of n keys, each a
// nested value, spread over lines with indentation as a launch script
// writes it, ending with an index_topk_freq the flags must replace.
func launchOverride(n int) string {
	var b strings.Builder
	b.WriteString("{\n")
	for i := range n {
		fmt.Fprintf(&b, "  \"override_%04d\": {\"values\": [%d, %d.25, \"v%d\"], \"enabled\": %t},\n", i, i, i, i, i%2 == 0)
	}
	b.WriteString("  \"index_topk_freq\": 2\n}")
	return b.String()
}

// longerChat is the chat request req with its message list n times over
// (the conversation replayed): a request of n times the size whose other
// members (tools, tool_choice, …) are unchanged.
func longerChat(req json.RawMessage, n int) json.RawMessage {
	var doc map[string]json.RawMessage
	var msgs []json.RawMessage
	if err := json.Unmarshal(req, &doc); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(doc["messages"], &msgs); err != nil {
		panic(err)
	}
	var err error
	if doc["messages"], err = catalog.Marshal(repeated(msgs, n)); err != nil {
		panic(err)
	}
	out, err := catalog.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

// relayoutPool is layout.convert relaying an MLA host pool of layers
// layers and pages pages (page size ps, tb bytes a token) from layer-first
// to layer-page-first.
func relayoutPool(layers, pages, ps, tb int64) spec.LayoutConvertInput {
	host := make([]byte, layers*pages*ps*tb)
	for i := range host {
		host[i] = byte(i*7 + i/251)
	}
	return spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: spec.LayerFirst, To: spec.LayerPageFirst, Pool: spec.HostPoolMLA,
		Layers: layers, Pages: pages, PageSize: ps, TokenBytes: tb, Host: host}
}

// topkLogits is q rows of kt MQA logits in [-8, 8) (multiples of 1/1024, so
// with ties), each row's window the whole width, top-k per row in chunks of
// 8 rows.
func topkLogits(q, kt int, topk int64) spec.MQAChunkedTopKInput {
	rng := rand.New(rand.NewPCG(uint64(q), uint64(kt)))
	in := spec.MQAChunkedTopKInput{Logits: make([][]float32, q), KS: make([]int64, q), KE: make([]int64, q), TopK: topk, ChunkRows: 8}
	for r := range in.Logits {
		in.Logits[r] = make([]float32, kt)
		for j := range in.Logits[r] {
			in.Logits[r][j] = float32(rng.IntN(1<<14)-(1<<13)) / 1024
		}
		in.KE[r] = int64(kt)
	}
	return in
}

// shuffledPages is n consecutive page ids from first, in a fixed random
// order (a fragmented chunk).
func shuffledPages(first int64, n int) []int64 {
	kv := make([]int64, n)
	for i := range kv {
		kv[i] = first + int64(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(n, func(i, j int) { kv[i], kv[j] = kv[j], kv[i] })
	return kv
}

// mlaLayerBlocks is transfer.layer_blocks for an MLA model of entries
// layer buffers moving pages page pairs: prefill pages in runs of 256 with
// a one-page gap, decode pages in runs of 384, so runs break on either
// side; each side's buffers just hold its highest page (64-token pages of
// 576 B, rounded to 2 MiB) and are laid out back to back.
func mlaLayerBlocks(entries, pages int) spec.TransferLayerBlocksInput {
	const itemLen = 64 * 576
	in := spec.TransferLayerBlocksInput{IsMLA: true}
	for k := range int64(pages) {
		in.Owned = append(in.Owned, k+k/256)
		in.DstPages = append(in.DstPages, k+k/384)
	}
	bytesFor := func(pages []int64) uint64 {
		const align = 2 << 20
		return ((uint64(pages[len(pages)-1])+1)*itemLen + align - 1) / align * align
	}
	src, dst := bytesFor(in.Owned), bytesFor(in.DstPages)
	for e := range uint64(entries) {
		in.SrcPtrs = append(in.SrcPtrs, 0x7f0000000000+e*src)
		in.DstPtrs = append(in.DstPtrs, 0x3f0000000000+e*dst)
		in.ItemLens = append(in.ItemLens, itemLen)
		in.SrcDataLens = append(in.SrcDataLens, src)
		in.DstDataLens = append(in.DstDataLens, dst)
	}
	return in
}

// perLayerForward is one forward of the per-layer transfer manager on n
// layer entries, h of them hooked, in groups of k, for bs requests of one
// chunk of pages pages each (request r sends pages [r·pages, (r+1)·pages)
// to the same decode pages, one run a layer, so the engine's call log stays
// small): create, every register, every layer hook, every completion event,
// every worker step, every finish. Pages hold 4 bytes a layer: what is
// measured is the manager, not the copy, and the two arenas (pages·bs·n
// items each) stay far under the server's 16 MiB output floor.
func perLayerForward(n, h, k, bs, pages int) spec.TransferPerLayerScriptInput {
	steps := []spec.PerLayerStep{{Op: spec.PerLayerCreate, Layers: n, Hooked: h, Group: k, ItemLen: 4, SrcPages: pages * bs, DstPages: pages * bs}}
	for r := range bs {
		reg := spec.PerLayerStep{Op: spec.PerLayerRegister, Room: uint64(r + 1), Infos: 1}
		for i := range int64(pages) {
			first := int64(r * pages)
			reg.Owned, reg.Dst = append(reg.Owned, first+i), append(reg.Dst, first+i)
		}
		steps = append(steps, reg)
	}
	steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerForwardBegin})
	events := (h + k - 1) / k
	for l := range h {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: l})
	}
	steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerForwardEnd})
	for e := 1; e <= events; e++ {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: e})
	}
	for range events * bs {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
	}
	for r := range bs {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerFinish, Room: uint64(r + 1)})
	}
	return spec.TransferPerLayerScriptInput{Steps: steps}
}

// stateRegistrations is transfer.state_layer_pairing for a model of layers
// layers whose index pattern alternates F and S (every even layer owns an
// index cache) plus one draft layer, K and V registered as two buffers
// each; decode registers the same buffers in a shuffled order.
func stateRegistrations(layers int) spec.TransferStateLayerPairingInput {
	pattern := strings.Repeat("FS", layers/2)
	var ids []int64
	for range 2 {
		for l := range len(pattern) {
			if pattern[l] == 'F' {
				ids = append(ids, int64(l))
			}
		}
		ids = append(ids, spec.DraftLayerIDBase)
	}
	register := func(base uint64) spec.StateRegistration {
		const itemLen = 64 * 132
		r := spec.StateRegistration{LayerIDs: append([]int64(nil), ids...)}
		for k := range ids {
			r.Ptrs = append(r.Ptrs, base+uint64(k)*itemLen*4096)
			r.ItemLens = append(r.ItemLens, itemLen)
		}
		return r
	}
	src, dst := register(0x7e00_0000_0000), register(0x7f00_0000_0000)
	rng := rand.New(rand.NewPCG(7, 8))
	rng.Shuffle(len(ids), func(i, j int) {
		dst.Ptrs[i], dst.Ptrs[j] = dst.Ptrs[j], dst.Ptrs[i]
		dst.LayerIDs[i], dst.LayerIDs[j] = dst.LayerIDs[j], dst.LayerIDs[i]
	})
	return spec.TransferStateLayerPairingInput{PPSize: 1, Src: src, Dst: dst,
		Index: &spec.IndexConfig{NumHiddenLayers: int64(layers), Pattern: &pattern,
			Capacity: &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}}}
}

// TestEveryOpHasALargeInputTheFastTwinAccepts keeps the large inputs from
// rotting: every op of the catalog has one, over 64 KiB and within the
// server's body limit, on which the fast twin succeeds under the server's
// default limits; or its input type is bounded under 64 KiB, which
// largeInputJSON computes. No builder names an op the catalog lacks. The
// ops run in parallel: the whole takes a fraction of a second, about three
// under -race on a busy 2-vCPU machine.
func TestEveryOpHasALargeInputTheFastTwinAccepts(t *testing.T) {
	cfg := server.DefaultConfig()
	served := map[string]bool{}
	for _, e := range catalog.All() {
		served[e.Name()] = true
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			in, whyNone, err := largeInputJSON(e)
			switch {
			case err != nil:
				t.Fatal(err)
			case whyNone != "":
				t.Skip(whyNone)
			case len(in) <= largeInputMin:
				t.Fatalf("large input is %d B, want over %d B", len(in), largeInputMin)
			case int64(len(in)) > cfg.MaxBodyBytes:
				t.Fatalf("large input is %d B, over the server's MaxBodyBytes (%d)", len(in), cfg.MaxBodyBytes)
			}
			if out, err := e.Run(catalog.Fast, cfg.Limits, in); err != nil {
				t.Fatalf("fast rejects its large input (%d B): %v %.300s", len(in), err, out)
			}
		})
	}
	for name := range largeInputs {
		if !served[name] {
			t.Errorf("largeInputs has a builder for %q, which is not an op of the catalog", name)
		}
	}
}

// TestFixedJSONBoundCoversTheLongestEncoding pins fixedJSONBound on a type
// whose every field holds its longest encoding, and its refusal of types
// whose encoding has no bound.
func TestFixedJSONBoundCoversTheLongestEncoding(t *testing.T) {
	type fixed struct {
		A int64   `json:"a"`
		B float64 `json:"b,omitempty"`
		C *uint64 `json:"c"`
		D bool
		E [2]int8 `json:"e"`
		F int     `json:"-"`
		g int
	}
	c := uint64(math.MaxUint64)
	longest, err := catalog.Marshal(fixed{A: math.MinInt64, B: -1.2345678901234567e-308, C: &c, D: false, E: [2]int8{-128, -128}, g: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := fixedJSONBound(reflect.TypeFor[fixed]())
	if !ok || n < len(longest) {
		t.Errorf("fixedJSONBound(fixed) = %d, %t; want ok and >= %d (%s)", n, ok, len(longest), longest)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[string](), reflect.TypeFor[[]int](), reflect.TypeFor[map[string]int](),
		reflect.TypeFor[json.RawMessage](), reflect.TypeFor[struct{ S *string }](), reflect.TypeFor[any]()} {
		if n, ok := fixedJSONBound(typ); ok {
			t.Errorf("fixedJSONBound(%s) = %d, true; want no bound", typ, n)
		}
	}
}
