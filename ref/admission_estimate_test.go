package ref_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// a25Context is A2.5's defaults: page 64, 656/132-byte rows, vocab
// 154880, transfer on with 79 layers, at CP size c.
func a25Context(c int64) spec.EstimatorContext {
	ctx := ref.DefaultEstimatorContext(64, c)
	ctx.TransferEnabled, ctx.TransferLayers = true, 79
	return ctx
}

func mustEstimate(t *testing.T, ctx spec.EstimatorContext, reqs ...spec.EstimateReq) spec.Estimate {
	t.Helper()
	est, err := ref.EstimateBuffers(ctx, reqs)
	if err != nil {
		t.Fatalf("EstimateBuffers: %v", err)
	}
	return est
}

// TestEstimateX1 is A2.5 X1: c=2, one request P=8192, E=4096, every term.
func TestEstimateX1(t *testing.T) {
	est := mustEstimate(t, a25Context(2), spec.EstimateReq{PrefixLen: 8192, ExtendLen: 4096})
	want := spec.Estimate{
		MLAMaterializeBytes: 8_060_928, IndexMaterializeBytes: 1_622_016,
		RemapMetadataBytes: 101_376, TransferDescriptorBytes: 121_344, LogitsWindowBytes: 619_520,
		MQALogitsPeakBytes: 100_663_296, LayerForwardPeakBytes: 110_346_240, PerForwardBytes: 842_240,
		TotalBytes: 111_188_480, WorstRank: 0,
		PerRank: []spec.RankMQA{
			{Rank: 0, QRows: 2048, KRows: 12288, ChunkRows: 2048, PeakBytes: 100_663_296},
			{Rank: 1, QRows: 2048, KRows: 11264, ChunkRows: 2048, PeakBytes: 92_274_688},
		},
	}
	assertEstimate(t, est, want)
	if g := ref.GateOn(est.TotalBytes, 1, 128<<20); !g.Admit || g.AloneOverLimit {
		t.Errorf("X1 under 128 MiB: gate %+v, want admitted", g)
	}
}

// TestEstimateX2 is A2.5 X2: two X1 requests cross 128 MiB and the second
// stops with cp_max_buffer_size; a 512-row cap brings both back under.
func TestEstimateX2(t *testing.T) {
	x := spec.EstimateReq{PrefixLen: 8192, ExtendLen: 4096}
	est := mustEstimate(t, a25Context(2), x, x)
	if est.MQALogitsPeakBytes != 402_653_184 || est.TotalBytes != 423_703_552 || est.PerRank[0].KRows != 24576 || est.PerRank[0].QRows != 4096 {
		t.Fatalf("X2: mqa %d total %d rank0 %+v, want 402653184, 423703552, Q=4096 K=24576", est.MQALogitsPeakBytes, est.TotalBytes, est.PerRank[0])
	}
	g := ref.GateOn(est.TotalBytes, 2, 128<<20)
	if g.Admit || g.Detail != spec.BufferGateDetail {
		t.Errorf("X2 over 128 MiB: gate %+v, want refused with %s", g, spec.BufferGateDetail)
	}
	ctx := a25Context(2)
	rows := int64(512)
	ctx.Chunk.MaxRows = &rows
	capped := mustEstimate(t, ctx, x, x)
	if capped.MQALogitsPeakBytes != 50_331_648 || capped.TotalBytes != 71_382_016 {
		t.Errorf("X2 rows=512: mqa %d total %d, want 50331648, 71382016", capped.MQALogitsPeakBytes, capped.TotalBytes)
	}
	if g := ref.GateOn(capped.TotalBytes, 2, 128<<20); !g.Admit {
		t.Errorf("X2 rows=512: gate %+v, want admitted", g)
	}
}

// TestEstimateX3 is A2.5 X3: under a 0.01 GiB cap (10,737,418 bytes) rank
// 1's shorter K fits more rows and becomes the worst rank.
func TestEstimateX3(t *testing.T) {
	ctx := a25Context(2)
	gb := 0.01
	ctx.Chunk.MaxGB = &gb
	est := mustEstimate(t, ctx, spec.EstimateReq{PrefixLen: 8192, ExtendLen: 4096})
	want := []spec.RankMQA{
		{Rank: 0, QRows: 2048, KRows: 12288, ChunkRows: 218, PeakBytes: 10_715_136},
		{Rank: 1, QRows: 2048, KRows: 11264, ChunkRows: 238, PeakBytes: 10_723_328},
	}
	if !slices.Equal(est.PerRank, want) || est.WorstRank != 1 || est.MQALogitsPeakBytes != 10_723_328 {
		t.Errorf("X3: ranks %+v worst %d peak %d, want %+v, worst 1", est.PerRank, est.WorstRank, est.MQALogitsPeakBytes, want)
	}
	if c := ref.GBCapExact(gb); c.Int64() != 10_737_418 {
		t.Errorf("int(0.01·2^30) = %v, want 10737418", c)
	}
}

// TestEstimateX4 is A2.5 X4: c=4, E=7 splits [1,1,1,1,1,1,1,0]; rank 1
// is the worst (800,056), and a cap below one row clamps every rank to one
// row (invariant 4's one-row floor).
func TestEstimateX4(t *testing.T) {
	req := spec.EstimateReq{PrefixLen: 100000, ExtendLen: 7}
	est := mustEstimate(t, a25Context(4), req)
	peaks := []int64{400_028, 800_056, 800_048, 800_040}
	for r, p := range peaks {
		if est.PerRank[r].PeakBytes != p {
			t.Errorf("X4 rank %d: peak %d, want %d (%+v)", r, est.PerRank[r].PeakBytes, p, est.PerRank[r])
		}
	}
	if est.WorstRank != 1 || est.MQALogitsPeakBytes != 800_056 {
		t.Errorf("X4: worst rank %d peak %d, want 1, 800056", est.WorstRank, est.MQALogitsPeakBytes)
	}
	if got := ref.EstimatorSplit(4, 7).S[0]; !slices.Equal(got, []int{1, 1, 1, 1, 1, 1, 1, 0}) {
		t.Errorf("split of 7 over cp 4 = %v", got)
	}
	ctx := a25Context(4)
	gb := 0.0001
	ctx.Chunk.MaxGB = &gb
	floor := mustEstimate(t, ctx, req)
	for _, rk := range floor.PerRank {
		if rk.ChunkRows != 1 {
			t.Errorf("X4 gb=0.0001 rank %d: %d chunk rows, want 1", rk.Rank, rk.ChunkRows)
		}
	}
	if floor.MQALogitsPeakBytes != 400_028 || floor.WorstRank != 0 {
		t.Errorf("X4 gb=0.0001: peak %d worst %d, want 400028 at rank 0", floor.MQALogitsPeakBytes, floor.WorstRank)
	}
}

// TestEstimateA3Example pins A3.4's figure for request a alone (P=4096,
// E=64, c=8): the bench reports Estimate(admitted).TotalBytes.
func TestEstimateA3Example(t *testing.T) {
	est := mustEstimate(t, a25Context(8), spec.EstimateReq{PrefixLen: 4096, ExtendLen: 64})
	if est.MQALogitsPeakBytes != 133_120 || est.TotalBytes != 4_066_936 {
		t.Errorf("A3.4: mqa %d total %d, want 133120, 4066936", est.MQALogitsPeakBytes, est.TotalBytes)
	}
}

func assertEstimate(t *testing.T, got, want spec.Estimate) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("estimate\n got %s\nwant %s", g, w)
	}
}

// TestEstimatorSplitIsTheLayoutSplit: where the layout builder accepts the
// batch (c >= 2, E >= 2c), the estimator's split is the layout's.
func TestEstimatorSplitIsTheLayoutSplit(t *testing.T) {
	for c := 2; c <= 9; c++ {
		for e := 2 * c; e < 6*c+3; e++ {
			lay, err := spec.BuildLayoutUnpadded(c, []int{e})
			if err != nil {
				t.Fatal(err)
			}
			if got := ref.EstimatorSplit(c, int64(e)); !slices.Equal(got.S[0], lay.S[0]) || !slices.Equal(got.V[0], lay.V[0]) {
				t.Errorf("c=%d e=%d: %v, layout %v", c, e, got.S[0], lay.S[0])
			}
		}
	}
}

// TestEstimateGate: a request alone is never refused (A1.9 no deadlock),
// and is flagged when over; the limit is inclusive.
func TestEstimateGate(t *testing.T) {
	cases := []struct {
		total, max int64
		n          int
		want       spec.BufferGate
	}{
		{100, 100, 2, spec.BufferGate{MaxBufferSizeBytes: 100, Admit: true}},
		{101, 100, 2, spec.BufferGate{MaxBufferSizeBytes: 100, Detail: spec.BufferGateDetail}},
		{101, 100, 1, spec.BufferGate{MaxBufferSizeBytes: 100, Admit: true, AloneOverLimit: true}},
		{0, 1, 0, spec.BufferGate{MaxBufferSizeBytes: 1, Admit: true}},
	}
	for _, c := range cases {
		if got := ref.GateOn(c.total, c.n, c.max); got != c.want {
			t.Errorf("GateOn(%d, %d, %d) = %+v, want %+v", c.total, c.n, c.max, got, c.want)
		}
	}
}

// TestEstimateBadInput is A2.7's table: each bad field with its sentinel
// and JSON path, checked in the contract order.
func TestEstimateBadInput(t *testing.T) {
	rows, gb, neg := int64(512), 0.01, int64(0)
	nan := math.NaN()
	tiny := 0.5 / (1 << 30)
	ok := spec.EstimateReq{PrefixLen: 1, ExtendLen: 1}
	cases := []struct {
		name  string
		edit  func(*spec.AdmissionEstimateInput)
		want  *spec.Sentinel
		field string
	}{
		{"page size 0", func(in *spec.AdmissionEstimateInput) { in.Context.PageSize = 0 }, spec.ErrInvalidPageSize, "context.page_size"},
		{"cp size 0", func(in *spec.AdmissionEstimateInput) { in.Context.CPSize = 0 }, spec.ErrBadCPSize, "context.cp_size"},
		{"cp size over MaxCP", func(in *spec.AdmissionEstimateInput) { in.Context.CPSize = spec.MaxCP + 1 }, spec.ErrInvalidCPSize, "context.cp_size"},
		{"mla bytes 0", func(in *spec.AdmissionEstimateInput) { in.Context.MLARowBytes = 0 }, spec.ErrEstimatorParam, "context.mla_row_bytes"},
		{"index bytes 0", func(in *spec.AdmissionEstimateInput) { in.Context.IndexRowBytes = 0 }, spec.ErrEstimatorParam, "context.index_row_bytes"},
		{"vocab 0", func(in *spec.AdmissionEstimateInput) { in.Context.VocabSize = 0 }, spec.ErrEstimatorParam, "context.vocab_size"},
		{"logit rows -1", func(in *spec.AdmissionEstimateInput) { in.Context.LogitRowsPerReq = -1 }, spec.ErrNegative, "context.logit_rows_per_req"},
		{"transfer layers -1", func(in *spec.AdmissionEstimateInput) { in.Context.TransferLayers = -1 }, spec.ErrNegative, "context.transfer_layers"},
		{"descriptor bytes 0", func(in *spec.AdmissionEstimateInput) { in.Context.DescriptorBytes = 0 }, spec.ErrEstimatorParam, "context.descriptor_bytes"},
		{"page descriptor bytes 0", func(in *spec.AdmissionEstimateInput) { in.Context.PageDescriptorBytes = 0 }, spec.ErrEstimatorParam, "context.page_descriptor_bytes"},
		{"row remap bytes 0", func(in *spec.AdmissionEstimateInput) { in.Context.RowRemapBytes = 0 }, spec.ErrEstimatorParam, "context.row_remap_bytes"},
		{"both caps (A2-B3)", func(in *spec.AdmissionEstimateInput) {
			in.Context.Chunk = spec.MQAChunkConfig{MaxRows: &rows, MaxGB: &gb}
		}, spec.ErrConfig, "context.chunk"},
		{"row cap 0", func(in *spec.AdmissionEstimateInput) { in.Context.Chunk.MaxRows = &neg }, spec.ErrConfig, "context.chunk.max_rows"},
		{"gb cap NaN", func(in *spec.AdmissionEstimateInput) { in.Context.Chunk.MaxGB = &nan }, spec.ErrConfig, "context.chunk.max_gb"},
		{"gb cap under one byte", func(in *spec.AdmissionEstimateInput) { in.Context.Chunk.MaxGB = &tiny }, spec.ErrConfig, "context.chunk.max_gb"},
		{"limit 0", func(in *spec.AdmissionEstimateInput) { in.MaxBufferSizeBytes = &neg }, spec.ErrEstimatorParam, "max_buffer_size_bytes"},
		{"prefix -1", func(in *spec.AdmissionEstimateInput) { in.Requests[1].PrefixLen = -1 }, spec.ErrNegative, "requests[1].prefix_len"},
		{"extend -1", func(in *spec.AdmissionEstimateInput) { in.Requests[1].ExtendLen = -1 }, spec.ErrNegative, "requests[1].extend_len"},
		{"rows overflow", func(in *spec.AdmissionEstimateInput) { in.Requests[1].PrefixLen = math.MaxInt64 }, spec.ErrOverflow, "estimate.rows"},
		{"mla overflow", func(in *spec.AdmissionEstimateInput) { in.Requests[1].PrefixLen = math.MaxInt64 / 600 }, spec.ErrOverflow, "estimate.mla_materialize_bytes"},
		{"mqa overflow", func(in *spec.AdmissionEstimateInput) {
			in.Context.MLARowBytes, in.Context.IndexRowBytes = 1, 1
			in.Requests[1] = spec.EstimateReq{PrefixLen: 1 << 40, ExtendLen: 1 << 40}
		}, spec.ErrOverflow, "estimate.mqa_logits_peak_bytes"},
		{"logits overflow", func(in *spec.AdmissionEstimateInput) { in.Context.VocabSize = math.MaxInt64 / 4 }, spec.ErrOverflow, "estimate.logits_window_bytes"},
	}
	for _, c := range cases {
		in := spec.AdmissionEstimateInput{Context: a25Context(2), Requests: []spec.EstimateReq{ok, ok}}
		c.edit(&in)
		_, err := ref.AdmissionEstimate(spec.DefaultLimits(), in)
		ie, isInput := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !isInput || ie.Field != c.field {
			t.Errorf("%s: %v, want %s on %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

// TestEstimateOverflowIsExact: at the int64 edge a term that fits exactly
// is returned, one byte more is an overflow, never a wrapped value.
func TestEstimateOverflowIsExact(t *testing.T) {
	ctx := ref.DefaultEstimatorContext(1, 1)
	ctx.MLARowBytes, ctx.IndexRowBytes, ctx.LogitRowsPerReq = 1, 1, 0
	ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1
	// One request with P+E = rows: remap = 2·rows, MQA = E·(P+E)·4.
	half := int64(math.MaxInt64 / 4)
	if _, err := ref.EstimateBuffers(ctx, []spec.EstimateReq{{PrefixLen: half, ExtendLen: 0}}); err != nil {
		t.Errorf("a batch whose terms fit: %v", err)
	}
	_, err := ref.EstimateBuffers(ctx, []spec.EstimateReq{{PrefixLen: math.MaxInt64/2 + 1, ExtendLen: 0}})
	if ie, ok := spec.AsInputError(err); !ok || ie.Field != "estimate.remap_metadata_bytes" {
		t.Errorf("remap = 2·(2^62) overflows: %v", err)
	}
}

// TestParseEstimatorChunkEnv is A2.7's environment rows: blank is unset,
// both set is refused, and each value's syntax and range.
func TestParseEstimatorChunkEnv(t *testing.T) {
	good := []struct {
		rows, gb string
		want     string
	}{
		{"", "", `{}`},
		{"  ", "\t", `{}`},
		{"512", "", `{"max_rows":512}`},
		{" 512 ", "", `{"max_rows":512}`},
		{"", "0.01", `{"max_gb":0.01}`},
		{"", "1e-9", `{"max_gb":1e-9}`},
	}
	for _, c := range good {
		cfg, err := ref.ParseEstimatorChunkEnv(c.rows, c.gb)
		b, _ := json.Marshal(cfg)
		if err != nil || string(b) != c.want {
			t.Errorf("Parse(%q, %q) = %s, %v; want %s", c.rows, c.gb, b, err, c.want)
		}
	}
	bad := [][2]string{{"512", "0.01"}, {"0", ""}, {"-3", ""}, {"1.5", ""}, {"x", ""}, {"", "0"}, {"", "-1"}, {"", "nan"}, {"", "inf"}, {"", "1e400"}, {"", "abc"}, {"", "1e-10"}}
	for _, c := range bad {
		if _, err := ref.ParseEstimatorChunkEnv(c[0], c[1]); !errors.Is(err, spec.ErrConfig) {
			t.Errorf("Parse(%q, %q): %v, want config error", c[0], c[1], err)
		}
	}
}

// TestEstimateIsPure is A2.6 invariant 6: the same input gives the same
// bytes, and the chunk environment variables are never read.
func TestEstimateIsPure(t *testing.T) {
	in := spec.AdmissionEstimateInput{Context: a25Context(4), Requests: []spec.EstimateReq{{PrefixLen: 100000, ExtendLen: 7}, {PrefixLen: 3, ExtendLen: 900}}}
	run := func() []byte {
		out, err := ref.AdmissionEstimate(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		return b
	}
	before := run()
	t.Setenv(ref.EnvMQAChunkMaxRows, "1")
	t.Setenv("SGLANG_NSA_MQA_LOGITS_FREE_MEM_FRACTION", "0.01")
	if after := run(); !bytes.Equal(before, after) {
		t.Errorf("environment changed the estimate:\n%s\n%s", before, after)
	}
}

// TestEstimateEmptyBatchAndCP1: an empty batch estimates zero on every
// rank; c = 1 is upstream's non-CP shape, Q = ΣE and K = Σ(P+E).
func TestEstimateEmptyBatchAndCP1(t *testing.T) {
	est := mustEstimate(t, a25Context(3))
	if est.TotalBytes != 0 || len(est.PerRank) != 3 {
		t.Errorf("empty batch: %+v", est)
	}
	one := mustEstimate(t, a25Context(1), spec.EstimateReq{PrefixLen: 10, ExtendLen: 5}, spec.EstimateReq{PrefixLen: 0, ExtendLen: 3})
	if r := one.PerRank[0]; r.QRows != 8 || r.KRows != 18 || r.PeakBytes != 8*18*4 {
		t.Errorf("c=1: %+v, want Q=8 K=18", r)
	}
}
