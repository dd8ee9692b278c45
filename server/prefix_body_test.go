package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
)

// postTokens posts tokens as a binary token list to path?query.
func postTokens(t *testing.T, url string, tokens []uint32) response {
	t.Helper()
	var body []byte
	for _, tok := range tokens {
		body = binary.LittleEndian.AppendUint32(body, tok)
	}
	resp, err := http.Post(url, server.TokensContentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b.Bytes()}
}

// TestBinaryTokenListsAnswerAsJSONBodiesDo: insert, match and score take
// the prompt as little-endian u32 with their other members in the query,
// and answer byte for byte what the same request as JSON answers; a route
// without a token list answers the content type 415.
func TestBinaryTokenListsAnswerAsJSONBodiesDo(t *testing.T) {
	ts := startPools(t)
	createPool(t, ts, "a", `{"page_size":2,"capacity_tokens":8}`)
	createPool(t, ts, "b", `{"page_size":2,"capacity_tokens":8}`)
	ins := postTokens(t, ts.URL+"/v1/prefix/a/insert?priority=1&extra=x", []uint32{1, 2, 3, 4, 5})
	if want := post(t, ts, "/v1/prefix/b/insert", `{"tokens":[1,2,3,4,5],"priority":1,"extra":"x"}`); ins.status != http.StatusOK || !bytes.Equal(ins.body, want.body) {
		t.Fatalf("binary insert %d %s, JSON insert %d %s", ins.status, ins.body, want.status, want.body)
	}
	for _, c := range []struct {
		path, query, json string
		tokens            []uint32
	}{
		{"/v1/prefix:score", "?pools=b,a&extra=x&exact=true", `{"tokens":[1,2,3,9],"pools":["b","a"],"extra":"x","exact":true}`, []uint32{1, 2, 3, 9}},
		{"/v1/prefix:score", "", `{"tokens":[1,2,3,4]}`, []uint32{1, 2, 3, 4}},
		{"/v1/prefix/a/match", "?extra=x", `{"tokens":[1,2,3,4],"extra":"x"}`, []uint32{1, 2, 3, 4}},
		{"/v1/prefix/a/match", "?pools=a", `{"tokens":[1],"pools":["a"]}`, []uint32{1}},                        // not a match member: 400
		{"/v1/prefix:score", "", `{"tokens":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, make([]uint32, 17)}, // 413
	} {
		got := postTokens(t, ts.URL+c.path+c.query, c.tokens)
		want := post(t, ts, c.path, c.json)
		if got.status != want.status || got.status == http.StatusOK && !bytes.Equal(got.body, want.body) {
			t.Errorf("%s%s: binary %d %s, JSON %d %s", c.path, c.query, got.status, got.body, want.status, want.body)
		}
		if got.status == http.StatusRequestEntityTooLarge && !bytes.Equal(got.body, want.body) {
			t.Errorf("%s: binary 413 %s, JSON 413 %s", c.path, got.body, want.body)
		}
	}
	r := postTokens(t, ts.URL+"/v1/prefix/a/evict", []uint32{1})
	openAIError(t, r, http.StatusUnsupportedMediaType, "UnsupportedMediaTypeError")
}

// trickle is a request body that arrives in pieces of 1 to 4,999 bytes,
// so the server sees token ids and pages split across its reads.
type trickle struct {
	b   []byte
	rng *rand.Rand
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.IntN(4999))], r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestLongBinaryPromptsDecodedWhileTheyArriveAnswerAsJSONDoes: a binary
// score of a long prompt (decoded and page-hashed while it arrives, for
// up to four page sizes, the rest hashed by the score) answers byte for
// byte what the same JSON request answers, for every pool subset, Eagle,
// exact and extra variant and the refusals, whether the body budget has
// room for the early decoding or not.
func TestLongBinaryPromptsDecodedWhileTheyArriveAnswerAsJSONDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	prompt := make([]uint32, 20000) // 80,000 bytes: past streamTokenBytes
	for i := range prompt {
		prompt[i] = rng.Uint32()
	}
	prompt[19999] = math.MaxUint32
	var bin []byte
	for _, tok := range prompt {
		bin = binary.LittleEndian.AppendUint32(bin, tok)
	}
	js := func(toks []uint32, rest string) string {
		b, _ := json.Marshal(toks)
		return `{"tokens":` + string(b) + rest + `}`
	}
	const maxBody = 300_000                                 // the JSON body is ~220 KB
	for _, budget := range []int64{64 << 20, maxBody + 1} { // room for the early decoding, and not
		ts, _ := start(t, func(c *server.Config) {
			c.Prefix = prefix.Limits{MaxPools: 8, MaxPoolCapacity: 1 << 15, MaxRequestTokens: 1 << 15, MaxBytes: 1 << 30}
			c.MaxBodyBytes, c.MaxBodyBytesInFlight = maxBody, budget
		})
		for _, p := range []struct{ name, cfg string }{
			{"p2", `{"page_size":2,"capacity_tokens":32768}`}, {"p3", `{"page_size":3,"capacity_tokens":32768}`},
			{"p7", `{"page_size":7,"capacity_tokens":32768}`}, {"p16", `{"page_size":16,"capacity_tokens":32768}`},
			{"p64", `{"page_size":64,"capacity_tokens":32768}`}, {"q64", `{"page_size":64,"capacity_tokens":32768}`},
			{"e16", `{"page_size":16,"capacity_tokens":32768,"eagle":true}`},
			{"x64", `{"page_size":64,"capacity_tokens":32768}`}, // the prompt under extra "x"
		} {
			createPool(t, ts, p.name, p.cfg)
			ns := ""
			if p.name == "x64" {
				ns = `,"extra":"x"`
			}
			if r := post(t, ts, "/v1/prefix/"+p.name+"/insert", js(prompt[:15000+len(p.name)*100], ns)); r.status != http.StatusOK {
				t.Fatalf("insert into %s: %d %s", p.name, r.status, r.body)
			}
		}
		for _, c := range []struct{ query, json string }{
			{"", ""},
			{"?pools=p64,e16,q64", `,"pools":["p64","e16","q64"]`},
			{"?pools=p7,p3", `,"pools":["p7","p3"]`},
			{"?exact=true", `,"exact":true`},
			{"?extra=x", `,"extra":"x"`},
			{"?extra=x&pools=x64,p64", `,"extra":"x","pools":["x64","p64"]`},
			{"?salt=s&pools=x64", `,"salt":"s","pools":["x64"]`},
			{"?salt=s&pools=p2", `,"salt":"s","pools":["p2"]`},
			{"?pools=nope", `,"pools":["nope"]`},
			{"?pools=p64,p64", `,"pools":["p64","p64"]`},
		} {
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/prefix:score"+c.query, &trickle{b: bin, rng: rng})
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = int64(len(bin))
			req.Header.Set("Content-Type", server.TokensContentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := post(t, ts, "/v1/prefix:score", js(prompt, c.json))
			if resp.StatusCode != want.status || !bytes.Equal(got, want.body) {
				t.Errorf("budget %d, %q: binary %d %.300s; JSON %d %.300s", budget, c.query, resp.StatusCode, got, want.status, want.body)
			}
		}
	}
}
