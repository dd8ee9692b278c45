package replay

import (
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// TestBlockTokenIsTheDocumentedFunction pins BlockToken to values computed
// independently from its doc comment (fmix32 of id XOR j·0x9E3779B9), so a
// change of the expansion, and with it every token-mode figure, is caught.
func TestBlockTokenIsTheDocumentedFunction(t *testing.T) {
	for _, tc := range []struct {
		id   spec.Unit
		j    int
		want uint32
	}{{0, 0, 0}, {1, 0, 1364076727}, {1, 1, 920564995}, {182789, 511, 1164759114}, {MaxHashID, 3, 3834300474}} {
		if got := BlockToken(tc.id, tc.j); got != tc.want {
			t.Errorf("BlockToken(%d, %d) = %d, want %d", tc.id, tc.j, got, tc.want)
		}
	}
}

// TestDistinctIDsStartWithDistinctTokens checks the property the replay
// relies on over the trace's id range and the 32-bit edge: token 0 is a
// bijection of the id, so different blocks never share a first token.
func TestDistinctIDsStartWithDistinctTokens(t *testing.T) {
	seen := map[uint32]spec.Unit{}
	ids := []spec.Unit{MaxHashID, MaxHashID - 1, 1 << 31}
	for id := range spec.Unit(200_000) {
		ids = append(ids, id)
	}
	for _, id := range ids {
		tok := BlockToken(id, 0)
		if prev, ok := seen[tok]; ok {
			t.Fatalf("ids %d and %d both start with token %d", prev, id, tok)
		}
		seen[tok] = id
	}
}

func TestExpansionTruncatesTheLastBlockAndRepeatsEqualIDs(t *testing.T) {
	a := Request{InputLength: 512 + 100, HashIDs: []spec.Unit{7, 8}}
	b := Request{InputLength: 512 + 512 + 3, HashIDs: []spec.Unit{7, 8, 9}}
	ta, tb := AppendTokens(nil, a), AppendTokens(nil, b)
	if len(ta) != a.InputLength || len(tb) != b.InputLength {
		t.Fatalf("expanded to %d and %d tokens, want %d and %d", len(ta), len(tb), a.InputLength, b.InputLength)
	}
	for i, u := range ta {
		if tb[i] != u {
			t.Fatalf("token %d: %d vs %d; equal ids must expand to equal tokens", i, u, tb[i])
		}
		if want := spec.Unit(BlockToken(a.HashIDs[i/BlockTokens], i%BlockTokens)); u != want {
			t.Fatalf("token %d = %d, want BlockToken = %d", i, u, want)
		}
	}
}

func TestPromptsShareExactlyTheTokensOfTheirSharedBlocks(t *testing.T) {
	a := AppendTokens(nil, Request{InputLength: 3 * 512, HashIDs: []spec.Unit{1, 2, 3}})
	b := AppendTokens(nil, Request{InputLength: 3 * 512, HashIDs: []spec.Unit{1, 2, 4}})
	lcp := 0
	for lcp < len(a) && a[lcp] == b[lcp] {
		lcp++
	}
	if lcp != 2*512 {
		t.Errorf("prompts sharing 2 blocks share %d tokens, want 1024", lcp)
	}
}

func TestTokenKeyReusesItsBuffer(t *testing.T) {
	req := Request{InputLength: 600, HashIDs: []spec.Unit{1, 2}}
	buf := make([]spec.Unit, 0, 1024)
	k := TokenKey(buf, req)
	if len(k.Units) != 600 || &k.Units[0] != &buf[:1][0] {
		t.Errorf("TokenKey built %d units in a new array; want 600 in buf", len(k.Units))
	}
	if got := BlockKey(req); &got.Units[0] != &req.HashIDs[0] {
		t.Error("BlockKey copied the hash ids; it should view them")
	}
}
