package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/internal/u32le"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// fullPath is what the full path makes of a body: the gate, the gjson
// count and catalog.DecodeStrict, as prefixPost runs them; ok is false
// when any of them refuses it.
func fullPath[In any](body []byte, maxTokens, maxDepth int) (In, bool) {
	var zero In
	if gate(body, maxDepth, jsonscan.SchemaOf(reflect.TypeFor[In]())) != nil {
		return zero, false
	}
	if t := gjson.GetBytes(body, "tokens"); t.IsArray() && int(t.Get("#").Int()) > maxTokens {
		return zero, false
	}
	in, err := catalog.DecodeStrict[In](body)
	return in, err == nil
}

// onePassAgrees checks one body on one route's body type: what the
// one-pass decoder takes, the full path takes with the same values.
func onePassAgrees[In any, P interface {
	*In
	tokenBody
}](t *rapid.T, body []byte, lim tokenLimits) bool {
	maxTokens, maxDepth := lim.maxTokens, lim.maxDepth
	var probe In
	// A recycled list holds an earlier request's tokens: decoding into one
	// must give what decoding into none gives.
	dirty := make([]int64, rapid.IntRange(0, 12).Draw(t, "recycled"))
	for i := range dirty {
		dirty[i] = 99
	}
	f, ok := decodeTokensJSON(body, P(&probe).members(), lim, dirty[:0])
	if f2, ok2 := decodeTokensJSON(body, P(&probe).members(), lim, nil); ok2 != ok || ok && !slices.Equal(f.tokens, f2.tokens) {
		t.Fatalf("%q: into a recycled list %v %v, into none %v %v", body, ok, f.tokens, ok2, f2.tokens)
	}
	// Reading the list in two runs takes exactly the bodies one run takes:
	// a refusal is only slower (the full path answers), so the contract
	// below cannot see a split that refuses what it should take.
	one := lim
	one.splitBytes = 0
	if f1, ok1 := decodeTokensJSON(body, P(&probe).members(), one, nil); ok1 != ok || ok && !slices.Equal(f.tokens, f1.tokens) {
		t.Fatalf("%q: in two runs %v %v, in one %v %v", body, ok, f.tokens, ok1, f1.tokens)
	}
	if !ok {
		return false
	}
	want, fullOK := fullPath[In](body, maxTokens, maxDepth)
	if !fullOK {
		t.Fatalf("the one-pass decoder takes %q, which the full path refuses", body)
	}
	var got In
	P(&got).fill(&f)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(scoreBody{})); diff != "" {
		t.Fatalf("%q decodes differently (-full +one-pass):\n%s", body, diff)
	}
	return true
}

// plainValues and unusualValues are, per member, values of its type the
// one-pass decoder takes, and values it must leave to the full path (the
// full path may still accept them: "-0", escapes, out-of-range tokens).
var (
	plainValues = map[string][]string{
		"tokens": {"0", "1", "42", "4294967295", "123456"},
		"extra":  {`""`, `"a"`, `"héllo"`, `"with space"`},
		"pools":  {`[]`, `["a"]`, `["a","b"]`, `[ "a" , "b" ]`},
		"exact":  {"true", "false"},
		"group":  {"0", "-0", "7", "-7", "9223372036854775807", "-9223372036854775808"},
	}
	unusualValues = map[string][]string{
		"tokens": {"4294967296", "9999999999", "12345678901", "007", "-3", "3.0", "2e2", "18446744073709551616", `"1"`, "null"},
		"extra":  {`"tab\tinside"`, `"\u00e9"`, `"a\\b"`, "\"\x01\"", "\"\xff\"", "null", "1", "[]"},
		"pools":  {`["a",]`, `[1]`, "null", `"a"`, `["\u0061"]`},
		"exact":  {"True", "0", "truex", "null", `"true"`},
		"group":  {"9223372036854775808", "00", "1.0", "1e1", "- 1", "null", `"1"`, "01"},
	}
)

// kindOf maps a member to the key of its value lists.
func kindOf(name string) string {
	switch name {
	case "salt", "tier":
		return "extra"
	case "lock":
		return "exact"
	case "priority":
		return "group"
	}
	return name
}

// drawValue is a plain JSON value for member name.
func drawValue(t *rapid.T, name string) string {
	if name == "tokens" {
		// up to 40 tokens, so that both runs of a split list often have the
		// 8 bytes scanPair reads ahead
		parts := make([]string, rapid.IntRange(0, 40).Draw(t, "n"))
		for i := range parts {
			parts[i] = rapid.SampledFrom(append(plainValues["tokens"], fmt.Sprint(rapid.Uint32().Draw(t, "tok")))).Draw(t, "tok")
		}
		return "[" + strings.Join(parts, rapid.SampledFrom([]string{",", ", ", " ,\n", ",\t"}).Draw(t, "sep")) + "]"
	}
	return rapid.SampledFrom(plainValues[kindOf(name)]).Draw(t, name)
}

// drawBody is a JSON object of the members one of the score, match or
// insert routes takes, each once, with plain values; half the time it
// then gets exactly one fault, so that the property sees each unusual
// case on its own rather than masked by another: an unusual token or
// value, a repeated, differently cased or foreign member, no tokens,
// trailing junk, or a cut.
func drawBody(t *rapid.T) []byte {
	names := rapid.SampledFrom([][]string{
		{"extra", "salt", "pools", "exact", "group", "tier"}, // score's
		{"extra", "salt", "lock"},                            // match's
		{"extra", "salt", "priority"},                        // insert's
	}).Draw(t, "route")
	type member struct{ name, value string }
	members := []member{{"tokens", drawValue(t, "tokens")}}
	for _, n := range names {
		if rapid.Bool().Draw(t, "has-"+n) {
			members = append(members, member{n, drawValue(t, n)})
		}
	}
	trail := ""
	cut := -1
	if rapid.Bool().Draw(t, "fault?") {
		i := rapid.IntRange(0, len(members)-1).Draw(t, "at")
		switch rapid.IntRange(0, 6).Draw(t, "fault") {
		case 0: // one unusual token
			toks := strings.Split(strings.Trim(members[0].value, "[]"), ",")
			toks[rapid.IntRange(0, len(toks)-1).Draw(t, "tok-at")] = rapid.SampledFrom(unusualValues["tokens"]).Draw(t, "bad-tok")
			members[0].value = "[" + strings.Join(toks, ",") + "]"
		case 1: // one unusual value
			members[i].value = rapid.SampledFrom(unusualValues[kindOf(members[i].name)]).Draw(t, "bad-value")
		case 2: // a member repeated
			members = append(members, member{members[i].name, drawValue(t, members[i].name)})
		case 3: // a member of another route, or no route's
			members = append(members, member{rapid.SampledFrom([]string{"Tokens", "TOKENS", "node", "tokenz", "lock", "priority", "pools"}).Draw(t, "foreign"), "1"})
		case 4: // no tokens
			members = members[1:]
		case 5:
			trail = rapid.SampledFrom([]string{" x", "{}", ",", "]", "\x00"}).Draw(t, "junk")
		case 6:
			cut = 0
		}
	}
	parts := make([]string, len(members))
	for i, m := range rapid.Permutation(members).Draw(t, "order") {
		parts[i] = fmt.Sprintf("%q%s:%s", m.name, rapid.SampledFrom([]string{"", " ", "\n"}).Draw(t, "ws"), m.value)
	}
	body := rapid.SampledFrom([]string{"", " ", "\r\n"}).Draw(t, "lead") + "{" + strings.Join(parts, ",") + "}" +
		rapid.SampledFrom([]string{"", " ", "\n"}).Draw(t, "ws-after") + trail
	if cut == 0 {
		body = body[:rapid.IntRange(0, len(body)-1).Draw(t, "cut")]
	}
	return []byte(body)
}

// TestOnePassDecodesAsTheFullPath is the one-pass decoder's contract: on
// every body it takes (a drawn mix of ordinary, unusual and broken
// bodies for the score, match and insert routes, under small token and
// depth limits), the full path takes it too and decodes the same values.
// So the decoder can only make a request faster: every other body keeps
// the full path's answer. The run must see the decoder take bodies of
// each route, or it would prove nothing.
func TestOnePassDecodesAsTheFullPath(t *testing.T) {
	var took [3]int
	rapid.Check(t, func(t *rapid.T) {
		lim := tokenLimits{
			maxTokens: rapid.SampledFrom([]int{0, 3, 8, 1 << 20}).Draw(t, "maxTokens"),
			maxDepth:  rapid.SampledFrom([]int{1, 2, 512}).Draw(t, "maxDepth"),
			// small lists read in two halves too, split anywhere
			splitBytes: rapid.SampledFrom([]int{0, 1, 8, 24}).Draw(t, "splitBytes"),
		}
		for range 16 { // many small bodies a check: each fault is rare on its own
			body := drawBody(t)
			for i, ok := range []bool{
				onePassAgrees[scoreBody](t, body, lim),
				onePassAgrees[matchBody](t, body, lim),
				onePassAgrees[insertBody](t, body, lim),
			} {
				if ok {
					took[i]++
				}
			}
		}
	})
	for i, route := range []string{"score", "match", "insert"} {
		if took[i] < 10 {
			t.Errorf("the one-pass decoder took only %d %s bodies: the property was hardly exercised", took[i], route)
		}
	}
}

// TestOnePassTakesOrdinaryBodiesAndLeavesTheRest pins, by hand, which
// bodies the decoder takes and which it leaves to the full path.
func TestOnePassTakesOrdinaryBodiesAndLeavesTheRest(t *testing.T) {
	score := (*scoreBody)(nil).members()
	for _, c := range []struct {
		body string
		take bool
	}{
		{`{"tokens":[1,2,3]}`, true},
		{` {"tokens": [0, 4294967295] , "pools":["a","b"],"exact":true,"group":-2,"tier":"gpu","extra":"é","salt":""} `, true},
		{`{"tokens":[]}`, true},
		{"{\"tokens\":[1,\n  2,\t3 ,\r\n4]}", true}, // any JSON whitespace around the commas
		{`{"tokens":[4294967296]}`, false},          // out of range: the pool's error
		{`{"tokens":[01]}`, false},                  // not JSON
		{`{"tokens":[-1]}`, false},
		{`{"tokens":[1.0]}`, false},
		{`{"tokens":[1],"tokens":[2]}`, false}, // a duplicate
		{`{"Tokens":[1]}`, false},              // encoding/json matches it case-insensitively
		{`{"tokens":[1],"lock":true}`, false},  // not a score member
		{`{"tokens":[1],"extra":null}`, false},
		{`{"tokens":[1],"extra":"\u00e9"}`, false}, // an escape
		{`{"tokens":[1]}x`, false},
		{`{"pools":["a"]}`, false},                // no tokens: the full path names what is missing
		{`{"tokens":[1,2,3,4,5,6,7,8,9]}`, false}, // over the limit of 8: the full path's 413
	} {
		for _, pb := range []int{0, 1} { // in one run, and in two
			_, ok := decodeTokensJSON([]byte(c.body), score, tokenLimits{maxTokens: 8, maxDepth: 512, splitBytes: pb}, nil)
			if ok != c.take {
				t.Errorf("%s (splitBytes %d): taken = %v, want %v", c.body, pb, ok, c.take)
			}
		}
	}
}

// decodeTokensBinary is the binary path of prefixPost without its slot:
// checkTokensBinary, then fillTokens into dst.
func decodeTokensBinary(body []byte, query url.Values, allowed prefixMember, maxTokens int, dst []int64) (prefixFields, *apiError) {
	f, aerr := checkTokensBinary(body, query, allowed, maxTokens)
	if aerr == nil {
		f.fillTokens(body, dst)
	}
	return f, aerr
}

// TestBinaryTokenListsDecodeWithTheirQuery pins the binary body: the
// tokens little-endian, the other members from the query, and the errors
// of a bad body or member.
func TestBinaryTokenListsDecodeWithTheirQuery(t *testing.T) {
	body := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 7), math.MaxUint32)
	q, _ := url.ParseQuery("pools=a,b&exact=true&group=-3&tier=gpu&extra=x")
	f, aerr := decodeTokensBinary(body, q, (*scoreBody)(nil).members(), 4, nil)
	if aerr != nil {
		t.Fatal(aerr.message)
	}
	var got scoreBody
	got.fill(&f)
	x := "x"
	want := scoreBody{Tokens: []int64{7, math.MaxUint32}, Pools: []string{"a", "b"}, Exact: true, Group: -3, Tier: "gpu", Extra: &x}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(scoreBody{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		body   []byte
		query  string
		status int
		msg    string
	}{
		{body[:7], "", http.StatusBadRequest, "tokens = 7 bytes: want a multiple of 4 bytes"},
		{make([]byte, 20), "", http.StatusRequestEntityTooLarge, "The input (5 tokens) is longer than the model's context length (4 tokens)."},
		{body, "lock=true", http.StatusBadRequest, "lock = unknown field"},
		{body, "tokens=1", http.StatusBadRequest, "tokens = unknown field"},
		{body, "exact=true&exact=false", http.StatusBadRequest, "exact = given 2 times"},
		{body, "exact=1", http.StatusBadRequest, `exact = "1": want true or false`},
		{body, "group=1.5", http.StatusBadRequest, `group = "1.5": want a decimal integer of 64 bits`},
	} {
		q, _ := url.ParseQuery(c.query)
		_, aerr := decodeTokensBinary(c.body, q, (*scoreBody)(nil).members(), 4, nil)
		if aerr == nil || aerr.status != c.status || !strings.Contains(aerr.message, c.msg) {
			t.Errorf("%d bytes, %q: got %+v, want %d %q", len(c.body), c.query, aerr, c.status, c.msg)
		}
	}
}

// TestBinaryTokensDecodeEveryLengthInOrder holds the two-at-a-time
// decode of a binary body to the one-at-a-time reading of the media type
// (little-endian u32, in order) on odd and even counts and reused buffers.
func TestBinaryTokensDecodeEveryLengthInOrder(t *testing.T) {
	dst := make([]int64, 3, 5) // stale values a short body must not leave behind
	for n := range 10 {
		body := make([]byte, 0, 4*n)
		want := make([]int64, n)
		for i := range n {
			want[i] = int64(math.MaxUint32 - 977*i)
			body = binary.LittleEndian.AppendUint32(body, uint32(want[i]))
		}
		var f prefixFields
		f.fillTokens(body, dst)
		if !slices.Equal(f.tokens, want) {
			t.Errorf("%d tokens: got %v, want %v", n, f.tokens, want)
		}
		dst = f.tokens
	}
}

// TestDigitParsingMatchesStrconv holds the 8-bytes-at-once digit scan to
// strconv on every digit count and whatever bytes follow the digits.
func TestDigitParsingMatchesStrconv(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := append([]byte(fmt.Sprint(rapid.Uint64Range(0, math.MaxUint32).Draw(t, "v"))),
			rapid.SliceOfN(rapid.Byte(), 0, 9).Draw(t, "after")...)
		want := 0
		for want < len(b) && want < 8 && b[want] >= '0' && b[want] <= '9' {
			want++
		}
		if len(b) < 8 {
			want = 0
		}
		n := digits8(b)
		if n != want {
			t.Fatalf("digits8(%q) = %d, want %d", b, n, want)
		}
		if n > 0 && n < 8 {
			want, _ := strconv.ParseUint(string(b[:n]), 10, 64)
			if got := parse8(binary.LittleEndian.Uint64(b), n); got != want {
				t.Fatalf("parse8(%q, %d) = %d, want %d", b, n, got, want)
			}
		}
	})
}

// BenchmarkDecodeTokensJSON is the one-pass decoder alone on a 240K-token
// score body (token ids 1 to 240,000, 1.7 MB), into a recycled list, with
// a plain copy of the same bytes as the yardstick; SetBytes makes the
// MB/s the decode speed the issue bounds (≥ 1 GB/s).
func BenchmarkDecodeTokensJSON(b *testing.B) {
	toks := make([]int64, 240_000)
	for i := range toks {
		toks[i] = int64(i + 1)
	}
	body, _ := json.Marshal(map[string]any{"tokens": toks, "pools": []string{"a"}})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		buf := make([]int64, 0, len(toks))
		for b.Loop() {
			f, ok := decodeTokensJSON(body, (*scoreBody)(nil).members(), tokenLimits{maxTokens: len(toks), maxDepth: 512, splitBytes: splitTokenBytes}, buf)
			if !ok || len(f.tokens) != len(toks) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("yardstick=copy", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		dst := make([]byte, len(body))
		for b.Loop() {
			copy(dst, body)
		}
	})
}

// TestTwoRunsOfALongListAreReadInOneLoop shows the split read's fast path
// is taken and exact: scanPair alone reads nearly all of a long compact
// list split at a comma near its middle (it stops only near the split
// and the end), and decodeTokensJSON, reading any list in two runs, gives
// encoding/json's tokens and, for each page size asked, the page hashes
// fast.TokenKeyChain chains, whichever page the two runs share.
func TestTwoRunsOfALongListAreReadInOneLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	for c := range 60 {
		tokens := make([]int64, 1+rng.IntN(3000))
		for i := range tokens {
			tokens[i] = rng.Int64N([]int64{10, 1e4, 1e7, 1 << 32}[rng.IntN(4)])
		}
		sep := []string{",", ", "}[c%2]
		parts := make([]string, len(tokens))
		for i, v := range tokens {
			parts[i] = strconv.FormatInt(v, 10)
		}
		body := []byte(`{"tokens":[` + strings.Join(parts, sep) + `]}`)
		if len(tokens) > 1000 && c%2 == 0 {
			start := len(`{"tokens":[`)
			sp := start + (len(body)-start)/2
			sp += bytes.IndexByte(body[sp:], ',')
			x := tokenCursor{i: start, stop: sp, limit: len(tokens)}
			y := tokenCursor{i: sp + 1, stop: -1, limit: len(tokens)}
			scanPair(body, &x, &y)
			if read := len(x.toks) + len(y.toks); read < len(tokens)*8/10 {
				t.Fatalf("case %d: scanPair read %d of %d tokens", c, read, len(tokens))
			}
		}
		sizes := []int{1, 3, 64, 1 + rng.IntN(200)}
		f, ok := decodeTokensJSON(body, (*scoreBody)(nil).members(), tokenLimits{maxTokens: len(tokens), maxDepth: 8, splitBytes: 1, hash: sizes}, nil)
		if !ok || !slices.Equal(f.tokens, tokens) {
			t.Fatalf("case %d: one pass %v, %d tokens, want %d", c, ok, len(f.tokens), len(tokens))
		}
		if len(f.pre) != len(sizes) && len(tokens) >= 100 { // a shorter list may have no comma near its middle
			t.Fatalf("case %d: %d page sizes hashed of a %d-token list, want %d", c, len(f.pre), len(tokens), len(sizes))
		}
		for k, h := range f.pre {
			_, want, _ := fast.TokenKeyChain("tokens", tokens, spec.ExtraKey{}, sizes[k])
			if _, got, err := h.Chain("tokens", f.tokens, spec.ExtraKey{}); err != nil || !slices.Equal(got, want) {
				t.Fatalf("case %d, page size %d: chain from the halves' hashes %v (%v), want %v", c, sizes[k], got, err, want)
			}
		}
	}
}

// TestALongBinaryScoreOfTokenPoolsKeepsNoEightByteIDs shows the lazy path
// is taken, and when not: a binary score of token pools (no Eagle pool,
// fewer page sizes than maxStreamHashers, no event index) keeps no 8-byte
// list and reserves only its page hashes; fed in uneven pieces, its
// hashers hash the ids where they lie, and the score from the body
// answers what the score of the decoded tokens answers. When a pool is
// replaced by an Eagle pool after the body arrived, ScoreLE32 declines
// and the route decodes the ids and still answers right. A score naming
// an Eagle pool, or an exact one, keeps its list.
func TestALongBinaryScoreOfTokenPoolsKeepsNoEightByteIDs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	body, tokens := binaryPrompt(n)
	for i, ps := range []int{2, 64, 64, 16} {
		p, err := s.pools.Create(fmt.Sprintf("p%d", i), prefix.Config{PageSize: ps, CapacityTokens: 1 << 15, Eagle: i == 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Insert(tokens[:n/(i+1)], spec.ExtraKey{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	req := func(query string) *http.Request { return scoreRequest(query, TokensContentType, len(body)) }
	ts := s.streamTokens(req("?pools=p0,p1,p2"), (*scoreBody)(nil))
	if ts == nil || !ts.lazy || ts.toks != nil || len(ts.hashers) != 2 {
		t.Fatalf("a binary score of token pools: %+v, want lazy with 2 hashers and no list", ts)
	}
	if want := int64(8 * (n/2 + n/64)); ts.reserved != want {
		t.Errorf("reserved %d bytes, want the page hashes' %d", ts.reserved, want)
	}
	for at := 0; at < len(body); at += 1 + at%4093 {
		ts.feed(body[:at])
	}
	ts.feed(body)
	if ts.fed != n || ts.hashers[0].Pages() != n/2 || ts.hashers[1].Pages() != n/64 {
		t.Fatalf("fed %d ids, hashed %d and %d pages; want %d, %d and %d", ts.fed, ts.hashers[0].Pages(), ts.hashers[1].Pages(), n, n/2, n/64)
	}
	want, err := s.pools.Score(tokens, spec.ExtraKey{}, []string{"p0", "p1", "p2"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.score(nil, &scoreBody{le: body, pre: ts.hashers, Pools: []string{"p0", "p1", "p2"}})
	if err != nil || !slices.Equal(got.(ScoreResult).Scores, want) {
		t.Fatalf("the score from the body %v (%v), want %v", got, err, want)
	}
	s.bodies.Release(ts.reserved)

	// The pools change between the body and the score: p2 becomes an
	// Eagle pool, which ScoreLE32 declines.
	ts = s.streamTokens(req("?pools=p1,p2"), (*scoreBody)(nil))
	if ts == nil || !ts.lazy {
		t.Fatal("not lazy")
	}
	ts.feed(body)
	if err := s.pools.Delete("p2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pools.Create("p2", prefix.Config{PageSize: 64, CapacityTokens: 1 << 15, Eagle: true}); err != nil {
		t.Fatal(err)
	}
	want, err = s.pools.Score(tokens, spec.ExtraKey{}, []string{"p1", "p2"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.score(nil, &scoreBody{le: body, pre: ts.hashers, Pools: []string{"p1", "p2"}})
	if err != nil || !slices.Equal(got.(ScoreResult).Scores, want) {
		t.Fatalf("declined, then decoded: %v (%v), want %v", got, err, want)
	}
	s.bodies.Release(ts.reserved)

	for _, q := range []string{"?pools=p0,p3", "", "?exact=true&pools=p0"} {
		ts := s.streamTokens(req(q), (*scoreBody)(nil))
		if ts == nil || ts.lazy || ts.toks == nil {
			t.Errorf("%q: %+v, want a stream that keeps its list", q, ts)
		}
		if ts != nil {
			s.bodies.Release(ts.reserved)
		}
	}
}

// BenchmarkTokenStreamFeed240K is what a 240K-token binary score costs the
// reading goroutine once its body is in: tokenStream.feed decoding the u32
// tokens and hashing their 3,750 pages of 64 (one page size), and each
// half alone (decode=only: u32le.Widen; hash=only: the page hashes of the
// decoded list). With the read-only transfer of BenchmarkPrefixScoreHTTP
// it is the floor of the binary row (docs/perf.md).
func BenchmarkTokenStreamFeed240K(b *testing.B) {
	const n = 240_000
	body := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(body[4*i:], uint32(i+1))
	}
	toks := make([]int64, n)
	pages := make([]spec.PrefixHash, 0, n/64)
	hasher := func() *prefix.PageHasher {
		h, err := prefix.NewPageHasher(64, pages)
		if err != nil {
			b.Fatal(err)
		}
		return h.InRange()
	}
	b.Run("feed", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			ts := tokenStream{n: n, toks: toks[:0], hashers: []*prefix.PageHasher{hasher()}}
			ts.feed(body)
			if len(ts.toks) != n || ts.hashers[0].Pages() != n/64 {
				b.Fatal("not fed whole")
			}
		}
	})
	// What the score then still does before its walks: the chain, from a
	// hasher told the namespace (as streamTokens does: folded while
	// hashed) and from one not told (folded after).
	for _, seeded := range []bool{true, false} {
		b.Run(fmt.Sprintf("feed+chain/seeded=%t", seeded), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				h := hasher()
				if seeded {
					h.Seed(spec.ExtraKey{})
				}
				ts := tokenStream{n: n, toks: toks[:0], hashers: []*prefix.PageHasher{h}}
				ts.feed(body)
				if _, c, err := h.Chain("tokens", ts.toks, spec.ExtraKey{}); err != nil || len(c) != n/64 {
					b.Fatal("no chain", err)
				}
			}
		})
	}
	// A lazy stream (the route's path for token pools): the ids hashed
	// where they lie, folded as hashed, no 8-byte list.
	b.Run("feed+chain/lazy", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			h := hasher().Seed(spec.ExtraKey{})
			ts := tokenStream{n: n, lazy: true, hashers: []*prefix.PageHasher{h}}
			ts.feed(body)
			if c := h.ChainLE32(body, spec.ExtraKey{}); len(c) != n/64 {
				b.Fatal("no chain")
			}
		}
	})
	b.Run("decode=only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			u32le.Widen(toks, body)
		}
	})
	b.Run("hash=only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			hasher().Add(toks)
		}
	})
}

// TestALongBinaryScoreIsHashedBeforeItsBodyEnds shows the early path is
// taken: for a binary score of a declared length past streamTokenBytes,
// the first half of the body, fed in uneven pieces, already has its pages
// hashed for each pool page size (at most maxStreamHashers, Eagle pools
// excluded), the whole body decodes to its tokens, and the score with
// those hashes equals the score without; a short body, an exact score, a
// JSON body and a budget without room take the old path.
func TestALongBinaryScoreIsHashedBeforeItsBodyEnds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, ps := range []int{2, 3, 5, 7, 11, 16} {
		if _, err := s.pools.Create(fmt.Sprintf("p%d", i), prefix.Config{PageSize: ps, CapacityTokens: 1 << 15, Eagle: ps == 16}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 30000
	body, tokens := binaryPrompt(n)
	req := scoreRequest
	ts := s.streamTokens(req("", TokensContentType, len(body)), (*scoreBody)(nil))
	if ts == nil {
		t.Fatal("a 120,000-byte binary score is not decoded while it arrives")
	}
	if got := len(ts.hashers); got != maxStreamHashers {
		t.Fatalf("%d page sizes hashed ahead, want %d (five non-Eagle sizes, capped)", got, maxStreamHashers)
	}
	for at := 0; at < len(body)/2; at += 1 + at%4093 {
		ts.feed(body[:at])
	}
	ts.feed(body[:len(body)/2])
	if len(ts.toks) != n/2 {
		t.Fatalf("%d tokens decoded from half the body, want %d", len(ts.toks), n/2)
	}
	for _, h := range ts.hashers {
		if least := (n/2)/h.PageSize() - 1; h.Pages() < least {
			t.Errorf("page size %d: %d pages hashed from half the body, want >= %d", h.PageSize(), h.Pages(), least)
		}
	}
	ts.feed(body)
	if !slices.Equal(ts.toks, tokens) {
		t.Fatal("the tokens decoded while arriving differ from the body's")
	}
	want, err := s.pools.Score(tokens, spec.ExtraKey{}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.pools.ScoreHashed(ts.toks, spec.ExtraKey{}, nil, false, ts.hashers)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("score with the early hashes %v %v, without %v", got, err, want)
	}
	s.bodies.Release(ts.reserved)
	for _, r := range []*http.Request{
		req("", TokensContentType, streamTokenBytes-4),
		req("", "application/json", len(body)),
		req("", TokensContentType, len(body)+1),
	} {
		if s.streamTokens(r, (*scoreBody)(nil)) != nil {
			t.Errorf("%s %d bytes: decoded while arriving", r.Header.Get("Content-Type"), r.ContentLength)
		}
	}
	if ts := s.streamTokens(req("?exact=true", TokensContentType, len(body)), (*scoreBody)(nil)); ts == nil || len(ts.hashers) != 0 {
		t.Error("an exact score hashes pages ahead, or is not decoded early")
	} else {
		s.bodies.Release(ts.reserved)
	}
	if !s.bodies.TryAcquire(cfg.MaxBodyBytesInFlight - int64(len(body))) {
		t.Fatal("the body budget is not whole after the streams released it")
	}
	if s.streamTokens(req("", TokensContentType, len(body)), (*scoreBody)(nil)) != nil {
		t.Error("decoded early with no room for its buffers beside the body")
	}
}

// binaryPrompt is a prompt of n token ids below 100,003, as the binary
// token list's bytes and as the ids they decode to.
func binaryPrompt(n int) ([]byte, []int64) {
	body := make([]byte, 4*n)
	tokens := make([]int64, n)
	for i := range tokens {
		tokens[i] = int64(i * 7919 % 100003)
		binary.LittleEndian.PutUint32(body[4*i:], uint32(tokens[i]))
	}
	return body, tokens
}

// scoreRequest is a score request of content type ctype declaring size
// bytes, with no body: what streamTokens looks at.
func scoreRequest(query, ctype string, size int) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/prefix:score"+query, nil)
	r.Header.Set("Content-Type", ctype)
	r.ContentLength = int64(size)
	return r
}
