package scaleout

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestToken(t *testing.T) {
	for in, want := range map[string]string{
		"pod-a":         "pod-a",
		"10.0.0.7:5557": "10_0_0_7_5557",
		"a b*c>d":       "a_b_c_d",
		"Éa":            "__a",
		"under_score":   "under_score",
	} {
		if got := Token(in); got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
		if !validToken(Token(in)) {
			t.Errorf("Token(%q) is not a valid token", in)
		}
	}
	if Subject("x") != "kvtwin.kv.x" {
		t.Error(Subject("x"))
	}
}

// TestWireRoundTrip: what batchMsg and resetMsg write, parseWire reads
// back, topics of any bytes included; headers are exactly §4.2's.
func TestWireRoundTrip(t *testing.T) {
	for _, topic := range [][]byte{nil, []byte("kv@pod@model"), []byte(" lead"), []byte("a\r\nb"), {0xff, 0, 'x'}} {
		m := batchMsg("tok", 3, 7, 42, true, topic, []byte{0x92, 1, 2})
		w, err := parseWire(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if w.token != "tok" || w.reset || w.epoch != 7 || w.seq != 42 || !w.gap || w.rank != 3 || !w.hasRank || w.topic != string(topic) || !bytes.Equal(w.body, m.Data) {
			t.Errorf("topic %q: read back %+v", topic, w)
		}
		if m.Header.Get(nats.MsgIdHdr) != "tok.7.42" {
			t.Errorf("Msg-Id %q", m.Header.Get(nats.MsgIdHdr))
		}
		if plain := m.Header.Get(HeaderTopicHex) == ""; plain != plainTopic(topic) {
			t.Errorf("topic %q: hex header set %v", topic, !plain)
		}
		for k, vs := range m.Header {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") {
					t.Errorf("header %s carries a line break: %q", k, v)
				}
			}
		}
	}
	m := resetMsg("tok", 0, 2)
	w, err := parseWire(m.Subject, m.Header, m.Data)
	if err != nil || !w.reset || w.epoch != 2 || m.Header.Get(nats.MsgIdHdr) != "tok.2.reset" {
		t.Errorf("reset read back %+v, %v, id %s", w, err, m.Header.Get(nats.MsgIdHdr))
	}
	if m := batchMsg("tok", 0, 0, 1, false, nil, nil); m.Header.Get(HeaderGap) != "" {
		t.Error("Kvtwin-Gap set without a gap")
	}
}

func TestWireMalformed(t *testing.T) {
	good := func() *nats.Msg { return batchMsg("tok", 0, 1, 2, false, []byte("t"), []byte{0x90}) }
	for _, c := range []struct {
		name string
		edit func(m *nats.Msg)
		want string
	}{
		{"subject", func(m *nats.Msg) { m.Subject = "other.tok" }, "subject"},
		{"token", func(m *nats.Msg) { m.Subject = "kvtwin.kv.a.b" }, "subject"},
		{"epoch", func(m *nats.Msg) { m.Header.Del(HeaderEpoch) }, HeaderEpoch},
		{"seq", func(m *nats.Msg) { m.Header.Set(HeaderSeq, "-1") }, HeaderSeq},
		{"rank", func(m *nats.Msg) { m.Header.Set(HeaderRank, "x") }, HeaderRank},
		{"reset value", func(m *nats.Msg) { m.Header.Set(HeaderReset, "yes") }, HeaderReset},
		{"reset body", func(m *nats.Msg) { m.Header.Set(HeaderReset, "1") }, "empty body"},
		{"topic hex", func(m *nats.Msg) { m.Header.Set(HeaderTopicHex, "zz") }, HeaderTopicHex},
	} {
		m := good()
		c.edit(m)
		if _, err := parseWire(m.Subject, m.Header, m.Data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
}
