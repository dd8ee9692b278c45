package tracegen

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/replay"
	"github.com/kvtwin/kvtwin/spec"
)

const samplePath = "../../replay/testdata/mooncake_conversation_500.jsonl"

// sample returns the committed sample's first n requests.
func sample(t testing.TB, n int) []replay.Request {
	t.Helper()
	reqs, err := replay.ReadFile(samplePath, replay.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return reqs[:n]
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	h1 = 0x1111111111111111
	h2 = 0xF0E1D2C3B4A59687
	ts = 1757500000.25
)

// TestEmitEncoderMatchesSpecE4 encodes §5.1 E4 (map form: a store, a
// removal and a clear in one batch) and expects the spec's 217 bytes.
func TestEmitEncoderMatchesSpecE4(t *testing.T) {
	want := mustHex(t, `93 cb41da3054981000 00 93
89 a4 74797065 ab 426c6f636b53746f726564
   ac 626c6f636b5f686173686573 91 cf1111111111111111
   b1 706172656e745f626c6f636b5f68617368 c0
   a9 746f6b656e5f696473 94 01020304
   aa 626c6f636b5f73697a65 04
   a7 6c6f72615f6964 c0  a6 6d656469756d a3 475055
   a9 6c6f72615f6e616d65 c0
   a9 67726f75705f696478 00
83 a4 74797065 ac 426c6f636b52656d6f766564
   ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
81 a4 74797065 b0 416c6c426c6f636b73436c6561726564
00`)
	if len(want) != 217 {
		t.Fatalf("spec bytes: %d, want 217", len(want))
	}
	enc, err := NewBatchEncoder(HashInt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := enc.Encode(ts, 0, []Event{Stored([]uint64{h1}, nil, []uint32{1, 2, 3, 4}, 4), Removed([]uint64{h1}), Cleared()},
		[]bool{true, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("E4:\n got %x\nwant %x", got, want)
	}
}

// TestEmitEncoderArrayForm checks form A (§1.4, the last vLLM array
// release, every field written) under each hash representation (§1.5).
func TestEmitEncoderArrayForm(t *testing.T) {
	d := BinDigest(h2)
	if binary.BigEndian.Uint64(d[24:]) != h2 {
		t.Fatalf("bin digest %x does not end in %x", d, uint64(h2))
	}
	for _, tc := range []struct{ form, h2, h1 string }{
		{HashInt, "cf f0e1d2c3b4a59687", "cf 1111111111111111"},
		{HashSigned, "d3 f0e1d2c3b4a59687", "cf 1111111111111111"},
		{HashBin, "c4 20 " + hex.EncodeToString(d[:]), "c4 20 " + func() string { d := BinDigest(h1); return hex.EncodeToString(d[:]) }()},
	} {
		// [ts, [BlockStored [H2] parent H1, BlockRemoved [H2]], 0]
		want := mustHex(t, `93 cb41da3054981000 00 92
9c ab 426c6f636b53746f726564 91 `+tc.h2+` `+tc.h1+`
   94 cc80 ccff cd0100 ce00010000 04 c0 a3 475055 c0 c0 00 c0 c0
94 ac 426c6f636b52656d6f766564 91 `+tc.h2+` a3 475055 c0
00`)
		enc, err := NewBatchEncoder(tc.form)
		if err != nil {
			t.Fatal(err)
		}
		p := uint64(h1)
		got, err := enc.Encode(ts, 0, []Event{Stored([]uint64{h2}, &p, []uint32{128, 255, 256, 65536}, 4), Removed([]uint64{h2})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", tc.form, got, want)
		}
		_, evs, _, err := DecodeGeneric(got)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			hs := ev.Fields["block_hashes"].([]any)
			if h, err := NormHash(hs[0]); err != nil || h != h2 {
				t.Errorf("%s: %s hash normalises to %v, %v", tc.form, ev.Type, h, err)
			}
		}
	}
}

// emit runs Emit into a buffer.
func emit(t testing.TB, reqs []replay.Request, o Options) ([]byte, *Result) {
	t.Helper()
	var buf bytes.Buffer
	res, err := Emit(&buf, reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.FileBytes != int64(buf.Len()) {
		t.Fatalf("summary says %d file bytes, wrote %d", res.Summary.FileBytes, buf.Len())
	}
	return buf.Bytes(), res
}

// TestEmitIsDeterministic: the same options give the same bytes; every
// option that changes the wire changes them.
func TestEmitIsDeterministic(t *testing.T) {
	reqs := sample(t, 40)
	base := Options{CapacityBlocks: 3000, Engines: 2, Encoding: EncodingMixed, ScoreEvery: 7, IDTokens: 128}
	a, _ := emit(t, reqs, base)
	b, _ := emit(t, reqs, base)
	if !bytes.Equal(a, b) {
		t.Fatal("two emissions with the same options differ")
	}
	for _, o := range []Options{
		{CapacityBlocks: 3000, Engines: 2, Encoding: EncodingArray, ScoreEvery: 7, IDTokens: 128},
		{CapacityBlocks: 3000, Engines: 2, Encoding: EncodingMixed, Hash: HashBin, ScoreEvery: 7, IDTokens: 128},
		{CapacityBlocks: 2000, Engines: 2, Encoding: EncodingMixed, ScoreEvery: 7, IDTokens: 128},
		{CapacityBlocks: 3000, Engines: 3, Encoding: EncodingMixed, ScoreEvery: 7, IDTokens: 128},
		{CapacityBlocks: 3000, Engines: 2, Encoding: EncodingMixed, ScoreEvery: 7, IDTokens: 128, FreeOrder: FreeHead},
		{CapacityBlocks: 3000, Engines: 2, Encoding: EncodingMixed, ScoreEvery: 7, IDTokens: 128, Batch: BatchRequest},
	} {
		if c, _ := emit(t, reqs, o); bytes.Equal(a, c) {
			t.Errorf("%+v gives the same bytes as %+v", o, base)
		}
	}
}

// TestEmitLinesAreKVEvSteps: the header and every line are what
// encoding/json writes for the Load-ed values.
func TestEmitLinesAreKVEvSteps(t *testing.T) {
	out, res := emit(t, sample(t, 20), Options{CapacityBlocks: 2000, ScoreEvery: 5, IDTokens: 128})
	in, err := Load(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 1+len(in.Steps) || len(in.Steps) != res.Summary.Batches+res.Summary.ScoreSteps {
		t.Fatalf("%d lines, %d steps, summary %d batches + %d scores", len(lines), len(in.Steps), res.Summary.Batches, res.Summary.ScoreSteps)
	}
	hdr, _ := json.Marshal(Header{Config: in.Config, Streams: in.Streams})
	if string(hdr) != lines[0] {
		t.Errorf("header line %s, json %s", lines[0], hdr)
	}
	for i, s := range in.Steps {
		b, _ := json.Marshal(s)
		if string(b) != lines[i+1] {
			t.Fatalf("step %d: line differs from its JSON encoding:\n%.200s\n%.200s", i, lines[i+1], b)
		}
	}
	if err := ref.ValidateKVEvApply(in); err != nil {
		t.Fatal(err)
	}
}

// model replays a decoded stream with set semantics plus copy counts, and
// checks the invariants an emitted stream must keep.
type model struct {
	count    map[spec.EvHash]int64
	parentOf map[spec.EvHash]spec.EvHash
	children map[spec.EvHash]int // resident hashes whose parent is the key
	interior int
	stored   int
	removed  int
	forms    map[string]int
}

func newModel() *model {
	return &model{count: map[spec.EvHash]int64{}, parentOf: map[spec.EvHash]spec.EvHash{}, children: map[spec.EvHash]int{}, forms: map[string]int{}}
}

var noneHash = spec.EvHash(NoneHash)

func (m *model) apply(t *testing.T, at string, evs []GenericEvent, bs int) {
	t.Helper()
	for _, ev := range evs {
		m.forms[ev.Form]++
		hashes := ev.Fields["block_hashes"].([]any)
		switch ev.Type {
		case "BlockStored":
			parent := noneHash
			if p := ev.Fields["parent_block_hash"]; p != nil {
				h, err := NormHash(p)
				if err != nil {
					t.Fatalf("%s: parent: %v", at, err)
				}
				if m.count[h] == 0 {
					t.Fatalf("%s: store under parent %v, which is not resident", at, h)
				}
				parent = h
			}
			toks := ev.Fields["token_ids"].([]any)
			if len(toks) != len(hashes)*bs || fmt.Sprint(ev.Fields["block_size"]) != fmt.Sprint(bs) {
				t.Fatalf("%s: %d tokens for %d blocks of %v", at, len(toks), len(hashes), ev.Fields["block_size"])
			}
			for i, raw := range hashes {
				h, err := NormHash(raw)
				if err != nil {
					t.Fatal(err)
				}
				// The hash is the chain of the package doc's chain over the event's tokens.
				buf := binary.LittleEndian.AppendUint64(nil, uint64(parent))
				for _, tok := range toks[i*bs : (i+1)*bs] {
					v, _ := NormHash(tok)
					buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
				}
				if want := spec.EvHash(xxh3.Hash(buf)); h != want {
					t.Fatalf("%s: block %d hash %v, chain gives %v", at, i, h, want)
				}
				m.parentOf[h] = parent
				if m.count[h]++; m.count[h] == 1 {
					m.children[parent]++
				}
				m.stored++
				parent = h
			}
		case "BlockRemoved":
			for _, raw := range hashes {
				h, err := NormHash(raw)
				if err != nil {
					t.Fatal(err)
				}
				if m.count[h] == 0 {
					t.Fatalf("%s: removal of %v, which is not resident", at, h)
				}
				if m.count[h]--; m.count[h] == 0 {
					delete(m.count, h)
					m.children[m.parentOf[h]]--
					if m.children[h] > 0 {
						m.interior++
					}
				}
				m.removed++
			}
		default:
			t.Fatalf("%s: unexpected event %s", at, ev.Type)
		}
	}
}

// check decodes every live step of out (msgpack's generic decoder, not a
// kvev twin) and checks seqs, topics, the hash chain, parents resident,
// removals resident, and the final state against the simulated caches.
func check(t *testing.T, out []byte, res *Result) []*model {
	t.Helper()
	in, err := Load(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Summary.Options
	models := make([]*model, o.Engines)
	next := make([]uint64, o.Engines)
	for i := range models {
		models[i] = newModel()
	}
	var total BatchCount
	for i, s := range in.Steps {
		if s.Op == spec.KVStepScore {
			continue
		}
		var eng int
		if _, err := fmt.Sscanf(s.Stream, "engine-%d", &eng); err != nil || s.Stream != StreamName(eng) || eng >= o.Engines {
			t.Fatalf("step %d: stream %q", i, s.Stream)
		}
		if len(s.Frames) != 3 || string(s.Frames[0]) != Topic(eng) || len(s.Frames[1]) != 8 {
			t.Fatalf("step %d: frames %q %x", i, s.Frames[0], s.Frames[1])
		}
		if seq := binary.BigEndian.Uint64(s.Frames[1]); seq != next[eng] {
			t.Fatalf("step %d: seq %d, want %d", i, seq, next[eng])
		}
		next[eng]++
		_, evs, rank, err := DecodeGeneric(s.Frames[2])
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if fmt.Sprint(rank) != "0" || len(evs) == 0 {
			t.Fatalf("step %d: rank %v, %d events", i, rank, len(evs))
		}
		c, _ := CountPayload(s.Frames[2])
		total.Add(c)
		models[eng].apply(t, fmt.Sprintf("step %d", i), evs, o.BlockSize)
	}
	sum := res.Summary
	if total.Stored != sum.StoredEvents || total.BlocksStored != sum.BlocksStored || total.Removed != sum.RemovedEvents || total.BlocksRemoved != sum.BlocksRemoved {
		t.Errorf("counted %+v, summary %+v", total, sum)
	}
	interior := 0
	for i, m := range models {
		interior += m.interior
		if !maps.Equal(m.count, res.Resident[i]) {
			t.Errorf("engine %d: the stream leaves %d hashes resident, the simulated cache holds %d", i, len(m.count), len(res.Resident[i]))
		}
		if int(next[i]) != sum.EngineBatches[i] {
			t.Errorf("engine %d: %d batches, summary %d", i, next[i], sum.EngineBatches[i])
		}
	}
	if interior != sum.InteriorRemovals {
		t.Errorf("the stream has %d interior removals, the summary %d", interior, sum.InteriorRemovals)
	}
	return models
}

// TestEmitStreamIsConsistent checks the stream's invariants for every
// encoding and hash representation, one and three engines (the trace's
// 512 tokens per hash id in the first case, fewer in the others to keep
// the streams small).
func TestEmitStreamIsConsistent(t *testing.T) {
	reqs := sample(t, 60)
	for _, o := range []Options{
		{CapacityBlocks: 4000, Encoding: EncodingArray, Hash: HashInt},
		{CapacityBlocks: 1000, Encoding: EncodingMap, Hash: HashBin, Engines: 3, IDTokens: 128},
		{CapacityBlocks: 1000, Encoding: EncodingMixed, Hash: HashSigned, Engines: 3, Batch: BatchRequest, IDTokens: 128},
		{Encoding: EncodingMixed, BlockSize: 32, IDTokens: 64},
	} {
		t.Run(fmt.Sprintf("%s-%s-%d", o.Encoding, o.Hash, o.Engines), func(t *testing.T) {
			out, res := emit(t, reqs, o)
			models := check(t, out, res)
			forms := map[string]int{}
			for _, m := range models {
				for f, n := range m.forms {
					forms[f] += n
				}
			}
			switch o.Encoding {
			case EncodingMixed:
				if forms[EncodingArray] == 0 || forms[EncodingMap] == 0 {
					t.Errorf("mixed stream's forms: %v", forms)
				}
			default:
				if len(forms) != 1 || forms[o.Encoding] == 0 {
					t.Errorf("%s stream's forms: %v", o.Encoding, forms)
				}
			}
			if o.CapacityBlocks > 0 && res.Summary.BlocksRemoved == 0 {
				t.Errorf("capacity %d below the working set, no removals: %+v", o.CapacityBlocks, res.Summary)
			}
			if o.Engines > 1 {
				for i, n := range res.Summary.EngineBatches {
					if n == 0 {
						t.Errorf("engine %d got no batches", i)
					}
				}
			}
		})
	}
}

// TestEmitHashFormsNormaliseAlike: int, bin and signed streams carry the
// same normalised events.
func TestEmitHashFormsNormaliseAlike(t *testing.T) {
	reqs := sample(t, 30)
	var first *Result
	for _, h := range []string{HashInt, HashBin, HashSigned} {
		_, res := emit(t, reqs, Options{CapacityBlocks: 1000, Hash: h, IDTokens: 128})
		if first == nil {
			first = res
			continue
		}
		for i := range first.Resident {
			if !maps.Equal(first.Resident[i], res.Resident[i]) {
				t.Errorf("%s: final caches differ from int's", h)
			}
		}
	}
}

// TestEmitInteriorRemovals: a capacity below the working set evicts; with
// vLLM's free order (tail) every removal is a leaf, with head-first order
// removals take interior blocks whose descendants stay resident.
func TestEmitInteriorRemovals(t *testing.T) {
	reqs := sample(t, 60)
	for _, tc := range []struct {
		order    string
		interior bool
	}{{FreeTail, false}, {FreeHead, true}} {
		out, res := emit(t, reqs, Options{CapacityBlocks: 1000, FreeOrder: tc.order, Encoding: EncodingMixed, IDTokens: 128})
		check(t, out, res)
		s := res.Summary
		if s.BlocksRemoved == 0 {
			t.Fatalf("%s: no removals: %+v", tc.order, s)
		}
		if got := s.InteriorRemovals > 0; got != tc.interior {
			t.Errorf("%s: %d interior removals of %d", tc.order, s.InteriorRemovals, s.BlocksRemoved)
		}
		if int64(s.BlocksStored-s.BlocksRemoved) != s.ResidentBlocks || s.ResidentBlocks > 1000 {
			t.Errorf("%s: stored %d − removed %d ≠ resident %d (capacity 1000)", tc.order, s.BlocksStored, s.BlocksRemoved, s.ResidentBlocks)
		}
	}
}

// TestEmitDuplicateStores: a repeated block-aligned prompt recomputes its
// last block (vLLM never hits the last token), storing a second copy.
func TestEmitDuplicateStores(t *testing.T) {
	req := replay.Request{InputLength: 1024, HashIDs: []spec.Unit{7, 8}}
	out, res := emit(t, []replay.Request{req, req, req}, Options{Batch: BatchRequest})
	check(t, out, res)
	s := res.Summary
	// 64 blocks, then the last block again twice.
	if s.BlocksStored != 66 || s.DuplicateStores != 2 || s.HitBlocks != 126 {
		t.Errorf("%+v", s)
	}
	copies := 0
	for _, n := range res.Resident[0] {
		if n > 1 {
			copies += int(n)
		}
	}
	if copies != 3 {
		t.Errorf("last block's copies: %d, want 3", copies)
	}
}

// TestEmitTruncatesToCapacity: a prompt longer than the pool keeps its
// first capacity blocks.
func TestEmitTruncatesToCapacity(t *testing.T) {
	reqs := sample(t, 5)
	out, res := emit(t, reqs, Options{CapacityBlocks: 100})
	check(t, out, res)
	if res.Summary.Truncated == 0 || res.Summary.ResidentBlocks != 100 {
		t.Errorf("%+v", res.Summary)
	}
}

func TestEmitRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Encoding: "json"}, {Hash: "str"}, {Engines: -1}, {BlockSize: -4}, {Batch: "x"}, {FreeOrder: "lru"}, {IDTokens: 513}, {CapacityBlocks: -1}} {
		if _, err := Emit(&bytes.Buffer{}, nil, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
