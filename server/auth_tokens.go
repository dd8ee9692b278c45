package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Bounds of the token file (docs/api.md "Token file"). A request checks
// its token against every entry, so MaxTokens also bounds that work
// (about 21 µs at 1,024 entries on a loaded 2-vCPU Xeon, whichever entry
// matches).
const (
	// MaxTokens is the most tokens one file may hold.
	MaxTokens = 1024
	// MinTokenBytes is the shortest token accepted: 16 bytes of base64 or
	// hex is already 96 or 64 random bits; shorter ones are guessable.
	MinTokenBytes = 16
	// MaxTokenBytes is the longest token accepted.
	MaxTokenBytes = 4096
)

// digestPrefix marks a token file entry that holds the SHA-256 of the
// token (64 hex digits) instead of the token, so the server's copy of the
// file need not hold the secret itself.
const digestPrefix = "sha256:"

// tokenSet is a loaded token file: one SHA-256 digest and scope per token.
// It is never changed after parseTokens; a reload swaps in a new one.
type tokenSet struct {
	digests [][sha256.Size]byte
	scopes  []Scope
}

// parseTokens reads a token file: one `SCOPE TOKEN` per line, SCOPE read,
// write or admin, TOKEN an RFC 6750 token of MinTokenBytes to
// MaxTokenBytes or `sha256:` and its digest in hex; blank lines and lines
// starting with # are skipped. Errors name the file, the line and the
// bound, never a token.
func parseTokens(path string, b []byte) (*tokenSet, error) {
	set := &tokenSet{}
	firstLine := map[[sha256.Size]byte]int{}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(what string, value any, bound string) error {
			return spec.Reject(ErrBadConfig, fmt.Sprintf("Auth.TokensFile %s line %d: %s", path, n, what), value, bound)
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, bad("fields", len(fields), "2: SCOPE TOKEN")
		}
		scope, err := ParseScope(fields[0])
		if err != nil || scope == ScopeOpen {
			return nil, bad("scope", fields[0], "read, write or admin")
		}
		d, err := tokenDigest(fields[1])
		if err != nil {
			return nil, bad("token", err.Error(), fmt.Sprintf("%d to %d bytes of A-Z a-z 0-9 - . _ ~ + / then any =, or %s and 64 hex digits",
				MinTokenBytes, MaxTokenBytes, digestPrefix))
		}
		if prev, dup := firstLine[d]; dup {
			return nil, bad("token", "the token of line "+fmt.Sprint(prev), "each token once: one token, one scope")
		}
		if len(set.digests) == MaxTokens {
			return nil, bad("tokens", MaxTokens+1, fmt.Sprintf("at most %d tokens in one file", MaxTokens))
		}
		firstLine[d] = n
		set.digests = append(set.digests, d)
		set.scopes = append(set.scopes, scope)
	}
	if len(set.digests) == 0 {
		return nil, spec.Reject(ErrBadConfig, "Auth.TokensFile "+path, "no tokens",
			"at least one `SCOPE TOKEN` line: an empty file would lock every caller out")
	}
	return set, nil
}

// tokenDigest is the SHA-256 of a token, or the digest a `sha256:` entry
// spells. Its error describes what is wrong without quoting the token.
func tokenDigest(tok string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if hexDigest, ok := strings.CutPrefix(tok, digestPrefix); ok {
		if len(hexDigest) != 2*sha256.Size {
			return d, fmt.Errorf("a digest of %d hex digits", len(hexDigest))
		}
		if _, err := hex.Decode(d[:], []byte(hexDigest)); err != nil {
			return d, fmt.Errorf("a digest that is not hex")
		}
		return d, nil
	}
	if len(tok) < MinTokenBytes || len(tok) > MaxTokenBytes {
		return d, fmt.Errorf("%d bytes", len(tok))
	}
	if at := invalidTokenByte(tok); at >= 0 {
		return d, fmt.Errorf("a byte outside the token alphabet at offset %d", at)
	}
	return sha256.Sum256([]byte(tok)), nil
}

// invalidTokenByte is the offset of the first byte that RFC 6750's
// b64token does not allow (A-Z a-z 0-9 - . _ ~ + / and trailing =), or -1.
func invalidTokenByte(tok string) int {
	end := len(strings.TrimRight(tok, "="))
	for i := range end {
		c := tok[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return i
		}
	}
	if end == 0 {
		return 0
	}
	return -1
}

// lookup finds a presented token's scope in constant time: it compares the
// token's SHA-256 with every entry's, fixed-length digests through
// crypto/subtle without an early exit, so neither which entry matched,
// nor how much of one, nor the token's length shows in the time taken.
func (t *tokenSet) lookup(token string) (Scope, bool) {
	d := sha256.Sum256([]byte(token))
	found, scope := 0, 0
	for i := range t.digests {
		eq := subtle.ConstantTimeCompare(d[:], t.digests[i][:])
		scope = subtle.ConstantTimeSelect(eq, int(t.scopes[i]), scope)
		found |= eq
	}
	return Scope(scope), found == 1
}

// len is the number of tokens loaded.
func (t *tokenSet) len() int { return len(t.digests) }
