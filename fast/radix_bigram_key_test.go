package fast_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestToBigramWorkedExamples is docs/spec/radix-acks.md §2.1: n tokens give n-1
// pairs, fewer than two give an empty (non-nil) key, a bigram key comes back
// unchanged, and the result never aliases the input.
func TestToBigramWorkedExamples(t *testing.T) {
	cases := []struct {
		in, want []spec.Unit
	}{
		{[]spec.Unit{5, 7, 7, 9}, []spec.Unit{5<<32 | 7, 7<<32 | 7, 7<<32 | 9}},
		{[]spec.Unit{42}, []spec.Unit{}},
		{[]spec.Unit{}, []spec.Unit{}},
		{nil, []spec.Unit{}},
	}
	for _, c := range cases {
		got, err := fast.ToBigram(spec.RadixKey{Units: c.in})
		if err != nil || !got.Bigram || got.Units == nil || !slices.Equal(got.Units, c.want) {
			t.Errorf("ToBigram(%v) = %+v, %v; want %v", c.in, got, err, c.want)
		}
	}
	in := []spec.Unit{1, 2, 3}
	got, _ := fast.ToBigram(spec.RadixKey{Units: in})
	in[1] = 9
	if got.Units[0] != 1<<32|2 {
		t.Error("the bigram key aliases its input")
	}
	twice, _ := fast.ToBigram(got)
	if !reflect.DeepEqual(twice, got) {
		t.Error("converting a bigram key changed it")
	}
}

// TestToBigramEqualsRef compares the fast and ref conversions, errors
// included, on random keys with occasional out-of-range tokens.
func TestToBigramEqualsRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		k := spec.RadixKey{Units: make([]spec.Unit, rng.IntN(20))}
		for i := range k.Units {
			k.Units[i] = spec.Unit(rng.Uint32())
			if rng.IntN(40) == 0 {
				k.Units[i] = 1<<32 + spec.Unit(rng.IntN(3))
			}
		}
		want, werr := ref.ToBigram(k)
		got, gerr := fast.ToBigram(k)
		if !reflect.DeepEqual(want, got) || errText(werr) != errText(gerr) {
			t.Fatalf("ToBigram(%v): ref %v, %v; fast %v, %v", k.Units, want, werr, got, gerr)
		}
	}
}

// errText renders an error for byte comparison ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestBigramViewIsTheMaterializedKey: a view's At, Len and Slice agree with
// the materialized pairs, slices share the boundary token, and out-of-range
// indices and tokens are rejected.
func TestBigramViewIsTheMaterializedKey(t *testing.T) {
	toks := []spec.Unit{5, 7, 7, 9, 1}
	v, err := fast.NewBigramView(toks)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.ToBigram(spec.RadixKey{Units: toks})
	if !slices.Equal(v.Materialize(), want.Units) || v.Len() != 4 {
		t.Fatalf("view %v, want %v", v.Materialize(), want.Units)
	}
	for i := range 4 {
		for j := i; j <= 4; j++ {
			s, err := v.Slice(i, j)
			if err != nil || !slices.Equal(s.Materialize(), want.Units[i:j]) {
				t.Errorf("Slice(%d, %d) = %v, %v", i, j, s.Materialize(), err)
			}
		}
	}
	if u, err := v.At(3); u != 9<<32|1 || err != nil {
		t.Errorf("At(3) = %x, %v", u, err)
	}
	if _, err := v.At(4); !errors.Is(err, spec.ErrKeyRange) {
		t.Errorf("At(4): %v", err)
	}
	if _, err := v.Slice(2, 1); !errors.Is(err, spec.ErrKeyRange) {
		t.Errorf("Slice(2, 1): %v", err)
	}
	if _, err := fast.NewBigramView([]spec.Unit{1, 1 << 32}); !errors.Is(err, spec.ErrTokenRange) {
		t.Errorf("token 2^32: %v", err)
	}
	if e, _ := fast.NewBigramView([]spec.Unit{3}); e.Len() != 0 || e.Materialize() == nil {
		t.Error("a one-token view is not the empty key")
	}
	if a := testing.AllocsPerRun(10, func() { s, _ := v.Slice(1, 3); _, _ = s.At(1) }); a != 0 {
		t.Errorf("slicing a view allocated %v times", a)
	}
}

// TestHashPageVectors are §2.4's independently computed digests: tokens
// and bigrams chained on a prior, and the packed-LE64 trap that must differ.
func TestHashPageVectors(t *testing.T) {
	const (
		tok1   = "34fb5c825de7ca4aea6e712f19d439c1da0c92c37b423936c5f618545ca4fa1f"
		tok2   = "c57b445f90651b9a650e516ab2238c965b21af35608a31c303e6d9e407f2915c"
		bi1    = "ede8ef26a097f0fd889f9f39f6f5af921370630b164c4a4fa28eb716b2df9269"
		bi2    = "678c5307f2a02a2aaf8edbeb80ebac13663f70e14a4fc8d5d62b77e702841e4b"
		packed = "46df4303587e099c9112917c020a9dcdb872b79dcca03e8677faf66295e891f8"
	)
	hash := func(k spec.RadixKey, prior string) string {
		t.Helper()
		h, err := fast.HashPage(k, 0, len(k.Units), prior)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	bigrams := func(pairs ...spec.Unit) spec.RadixKey { return spec.RadixKey{Units: pairs, Bigram: true} }
	if h := hash(key(1, 2), ""); h != tok1 {
		t.Errorf("[1,2]: %s", h)
	}
	if h := hash(key(3, 4), tok1); h != tok2 {
		t.Errorf("[3,4] after [1,2]: %s", h)
	}
	if h := hash(bigrams(1<<32|2, 2<<32|3), ""); h != bi1 || h == packed {
		t.Errorf("[(1,2),(2,3)]: %s", h)
	}
	if h := hash(bigrams(3<<32|4, 4<<32|5), bi1); h != bi2 {
		t.Errorf("[(3,4),(4,5)] after: %s", h)
	}
	if id, _ := ref.HashEventID(tok1); id != 3817746824117602890 {
		t.Errorf("event id of [1,2]: %d", id)
	}
}

// TestHashPageEqualsRef compares digests and errors with ref.HashPage on
// keys longer than one hash chunk, random ranges and bad priors.
func TestHashPageEqualsRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	prior, _ := ref.HashPage(key(1, 2), 0, 2, "")
	for range 200 {
		k := spec.RadixKey{Units: make([]spec.Unit, rng.IntN(700)), Bigram: rng.IntN(2) == 0}
		for i := range k.Units {
			k.Units[i] = rng.Uint64()
		}
		start, end := rng.IntN(len(k.Units)+2)-1, rng.IntN(len(k.Units)+2)
		p := []string{"", prior, "zz", prior[:10]}[rng.IntN(4)]
		want, werr := ref.HashPage(k, start, end, p)
		got, gerr := fast.HashPage(k, start, end, p)
		if want != got || errText(werr) != errText(gerr) {
			t.Fatalf("HashPage(len %d, %d, %d, %q): ref %s %v; fast %s %v", len(k.Units), start, end, p, want, werr, got, gerr)
		}
	}
}

func TestBigramViewAppendToEqualsMaterializeWithoutAllocating(t *testing.T) {
	tokens := []spec.Unit{5, 7, 7, 9}
	v, err := fast.NewBigramView(tokens)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]spec.Unit, 1, 8)
	got := v.AppendTo(dst)
	want := append([]spec.Unit{0}, v.Materialize()...)
	if !slices.Equal(got, want) {
		t.Fatalf("AppendTo = %v, want %v", got, want)
	}
	if n := testing.AllocsPerRun(10, func() { dst = v.AppendTo(dst[:0]) }); n != 0 {
		t.Fatalf("AppendTo into a big-enough buffer allocated %v times", n)
	}
	if got := (fast.BigramView{}).AppendTo(nil); got != nil {
		t.Fatalf("empty view appended %v", got)
	}
}

// TestRadixPageHashesSizesItsBufferByTheTokensNotByPageSize is the
// hostile-input harness's finding on radix.page_hashes: the fast twin sized
// its page buffer as page_size·width before knowing whether one whole page
// exists, so page_size 2^31−1 allocated 8 GB for four tokens, 2^31+1 ran
// for seconds, 2^53+1 panicked (makeslice) and 10^12 took the server down.
// A page larger than the key hashes nothing — ref's answer — and what the
// twin allocates is bounded by the tokens it was sent.
func TestRadixPageHashesSizesItsBufferByTheTokensNotByPageSize(t *testing.T) {
	for _, ps := range []int{1<<31 - 1, 1<<31 + 1, 1<<53 + 1, 1 << 61, 1<<63 - 1, 1_000_000_000_000} {
		for _, bigram := range []bool{false, true} {
			in := spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3, 4}, Bigram: bigram, PageSize: ps}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			r := runBounded(t, hostileName(in), fast.RadixPageHashes, spec.DefaultLimits(), in)
			runtime.ReadMemStats(&m1)
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 64<<10 {
				t.Errorf("page_size %d bigram %t: allocated %d bytes for 4 tokens", ps, bigram, a)
			}
			if r.panic == nil {
				sameAsRef(t, hostileName(in), ref.RadixPageHashes, fast.RadixPageHashes, spec.DefaultLimits(), in)
			}
		}
	}
}
