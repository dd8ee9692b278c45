package server_test

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"testing"

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
