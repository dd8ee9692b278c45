package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func f64(x float64) *float64 { return &x }

// TestChunkRowsWorkedExamples pins docs/spec/cp-layout.md §8.2: rules 1–5 in order,
// the MaxGB examples (1 GiB at K=131072 → 2048 rows, K=100000 → 2684), and
// rule 4's threshold and budget with injected memory figures.
func TestChunkRowsWorkedExamples(t *testing.T) {
	rt := func(free, total int64) *spec.MQARuntimeBudget {
		return &spec.MQARuntimeBudget{FreeAtInit: free, TotalMem: total}
	}
	none := spec.MQAChunkConfig{}
	cases := []struct {
		name    string
		q, k    int64
		cfg     spec.MQAChunkConfig
		rt      *spec.MQARuntimeBudget
		wantRow int64
	}{
		{"rule 1: Q = 0 is no chunk", 0, 100, spec.MQAChunkConfig{MaxRows: i64(4)}, nil, 0},
		{"rule 1: K = 0 takes every row", 9, 0, spec.MQAChunkConfig{MaxRows: i64(4)}, rt(0, 0), 9},
		{"rule 2: row cap", 9, 100, spec.MQAChunkConfig{MaxRows: i64(4)}, nil, 4},
		{"rule 2: row cap above Q", 3, 100, spec.MQAChunkConfig{MaxRows: i64(4)}, nil, 3},
		{"rule 3: 1 GiB, K=131072", 1 << 20, 131072, spec.MQAChunkConfig{MaxGB: f64(1)}, nil, 2048},
		{"rule 3: 1 GiB, K=100000", 1 << 20, 100000, spec.MQAChunkConfig{MaxGB: f64(1)}, nil, 2684},
		{"rule 3: one row over the cap is still one row", 7, 1 << 30, spec.MQAChunkConfig{MaxGB: f64(1)}, nil, 1},
		{"rule 3 wins over the runtime budget", 1 << 20, 131072, spec.MQAChunkConfig{MaxGB: f64(1)}, rt(0, 0), 2048},
		{"rule 4: under 8M elements never chunks", 2000, 3999, none, rt(0, 0), 2000},
		{"rule 4: 8M elements within budget", 2000, 4000, none, rt(64_000_000, 1<<40), 2000},
		{"rule 4: 8·Q·K over free chunks to free/(8K)", 2000, 4000, none, rt(64_000_000-1, 1<<40), 1999},
		// Over 30% of total alone: chunking is "needed", but free >= 8·Q·K
		// makes free/(8K) >= Q, so the rows stay Q (the rule as written).
		{"rule 4: 4·Q·K over 30% of total alone", 2000, 4000, none, rt(1<<40, 106_666_666), 2000},
		{"rule 4: both over", 2000, 4000, none, rt(32_000_000, 106_666_666), 1000},
		{"rule 4: a tiny budget still runs one row", 4000, 4000, none, rt(7, 1<<40), 1},
		{"rule 5: the estimator takes Q", 1 << 20, 131072, none, nil, 1 << 20},
	}
	for _, c := range cases {
		if got := ref.ChunkRows(c.q, c.k, c.cfg, c.rt); got != c.wantRow {
			t.Errorf("%s: ChunkRows(%d, %d) = %d, want %d", c.name, c.q, c.k, got, c.wantRow)
		}
	}
}

// TestMQAPeakWorkedExamples pins docs/spec/cp-layout.md §8.4 (Appendix A11): cp=2,
// one request L=8: each rank Q=4, K=10 → 160 B (the full-request bug gives
// 256 B); P=64 → K=138, 2208 B; with MaxRows=2 → 1104 B.
func TestMQAPeakWorkedExamples(t *testing.T) {
	batch := func(p int64) *spec.MQAPeakBatch {
		return &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: 2, Lens: []int{8}}, Prefix: []int64{p}}
	}
	cases := []struct {
		name  string
		in    spec.MQAChunkRowsInput
		k     int64
		rows  int64
		bytes uint64
	}{
		{"P=0", spec.MQAChunkRowsInput{Batch: batch(0)}, 10, 4, 160},
		{"P=64", spec.MQAChunkRowsInput{Batch: batch(64)}, 138, 4, 2208},
		{"P=64, MaxRows=2", spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxRows: i64(2)}, Batch: batch(64)}, 138, 2, 1104},
	}
	for _, c := range cases {
		out, err := ref.MQAChunkRows(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for r, p := range out.Ranks {
			if p.Q != 4 || p.K != c.k || p.Rows != c.rows || p.PeakBytes != c.bytes {
				t.Errorf("%s rank %d: %+v, want Q=4 K=%d rows=%d peak=%d", c.name, r, p, c.k, c.rows, c.bytes)
			}
		}
		if len(out.Ranks) != 2 || out.AdmissionPeak != c.bytes {
			t.Errorf("%s: %d ranks, admission peak %d, want 2 and %d", c.name, len(out.Ranks), out.AdmissionPeak, c.bytes)
		}
	}
	// The non-CP formula on the same request is the full-request figure.
	out, err := ref.MQAChunkRows(spec.DefaultLimits(), spec.MQAChunkRowsInput{Batch: &spec.MQAPeakBatch{Layout: spec.LayoutSpec{Lens: []int{8}}, Prefix: []int64{0}}})
	if err != nil || len(out.Ranks) != 1 || out.AdmissionPeak != 256 {
		t.Errorf("non-CP L=8 P=0: %+v, %v; want one plan of 256 B", out, err)
	}
}

// TestParseMQAChunkEnv pins §8.1's reading of the environment: unset, a
// number, a non-number, NaN and Inf, ≤ 0, and both set.
func TestParseMQAChunkEnv(t *testing.T) {
	ok := []struct{ rows, gb string }{{"", ""}, {"2048", ""}, {"", "0.5"}, {"", "1e-3"}}
	for _, c := range ok {
		if _, err := ref.ParseMQAChunkEnv(c.rows, c.gb); err != nil {
			t.Errorf("(%q, %q): %v", c.rows, c.gb, err)
		}
	}
	bad := []struct{ rows, gb, field string }{
		{"2k", "", "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS"},
		{"1.5", "", "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS"},
		{" 8", "", "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS"},
		{"", "one", "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB"},
		{"0", "", "config.max_rows"},
		{"-3", "", "config.max_rows"},
		{"", "0", "config.max_gb"},
		{"", "-0.5", "config.max_gb"},
		{"", "NaN", "config.max_gb"},
		{"", "inf", "config.max_gb"},
		{"", "1e400", "config.max_gb"},
		{"8", "1", "config"},
	}
	for _, c := range bad {
		_, err := ref.ParseMQAChunkEnv(c.rows, c.gb)
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, spec.ErrConfig) || ie.Field != c.field {
			t.Errorf("(%q, %q): got %v, want config error on %s", c.rows, c.gb, err, c.field)
		}
	}
}

// TestMQAChunkRowsRejectsBadInputNamingFieldAndBound pins §8.5 (config
// errors as §8.1) and the layout's own sentinels under batch.layout.
func TestMQAChunkRowsRejectsBadInputNamingFieldAndBound(t *testing.T) {
	batch := func(cp, g int, lens []int, prefix []int64) *spec.MQAPeakBatch {
		return &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}, Prefix: prefix}
	}
	cases := []struct {
		in    spec.MQAChunkRowsInput
		want  *spec.Sentinel
		field string
	}{
		{spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxRows: i64(2), MaxGB: f64(1)}}, spec.ErrConfig, "config"},
		{spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxRows: i64(0)}}, spec.ErrConfig, "config.max_rows"},
		{spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxGB: f64(math.NaN())}}, spec.ErrConfig, "config.max_gb"},
		{spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxGB: f64(math.Inf(1))}}, spec.ErrConfig, "config.max_gb"},
		{spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxGB: f64(-1)}}, spec.ErrConfig, "config.max_gb"},
		{spec.MQAChunkRowsInput{Runtime: &spec.MQARuntimeBudget{FreeAtInit: -1}}, spec.ErrNegative, "runtime.free_at_init"},
		{spec.MQAChunkRowsInput{Runtime: &spec.MQARuntimeBudget{TotalMem: -1}}, spec.ErrNegative, "runtime.total_mem"},
		{spec.MQAChunkRowsInput{Shapes: []spec.MQALogitsShape{{Q: 1, K: 1}, {Q: -1}}}, spec.ErrNegative, "shapes[1].q"},
		{spec.MQAChunkRowsInput{Shapes: []spec.MQALogitsShape{{Q: 1, K: 1 << 31}}}, spec.ErrTooLarge, "shapes[0].k"},
		{spec.MQAChunkRowsInput{Batch: batch(1, 0, []int{8}, []int64{0})}, spec.ErrInvalidCPSize, "batch.layout.cp"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{}, []int64{})}, spec.ErrEmptyBatch, "batch.layout.lens"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{8, 0}, []int64{0, 0})}, spec.ErrBadLength, "batch.layout.lens[1]"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{3}, []int64{0})}, spec.ErrTooShortForZigzag, "batch.layout.lens[0]"},
		{spec.MQAChunkRowsInput{Batch: batch(2, -1, []int{3}, []int64{0})}, spec.ErrInvalidGranule, "batch.layout.granule"},
		{spec.MQAChunkRowsInput{Batch: batch(0, 64, []int{3}, []int64{0})}, spec.ErrInvalidGranule, "batch.layout.granule"},
		{spec.MQAChunkRowsInput{Batch: batch(0, 0, []int{0}, []int64{0})}, spec.ErrBadLength, "batch.layout.lens[0]"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{8}, []int64{})}, spec.ErrLengthMismatch, "batch.prefix"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{8, 8}, []int64{0, -4})}, spec.ErrNegative, "batch.prefix[1]"},
		{spec.MQAChunkRowsInput{Batch: batch(2, 0, []int{8}, []int64{1 << 30})}, spec.ErrTooLarge, "batch.prefix"},
		{spec.MQAChunkRowsInput{Batch: batch(0, 0, []int{1 << 30, 1 << 30}, []int64{0, 0})}, spec.ErrTooLarge, "batch.layout.lens"},
	}
	for _, c := range cases {
		_, err := ref.MQAChunkRows(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
