package scaleout

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/kvtwin/kvtwin/spec"
)

// The JetStream wire format of docs/spec/kv-events.md §4.2: one message per
// batch the relay's index applied, on subject kvtwin.kv.<source-token>,
// body = the raw payload (frame 3), headers below.

// Subjects and the default stream.
const (
	// SubjectPrefix is the prefix of every relay subject; a source's
	// subject is SubjectPrefix + its token.
	SubjectPrefix = "kvtwin.kv."
	// SubjectFilter is the stream's subject and every consumer's filter.
	SubjectFilter = "kvtwin.kv.>"
	// DefaultStream is the stream's default name.
	DefaultStream = "KVTWIN_KV"
)

// Headers of a relayed message (§4.2). HeaderRank is kvtwin's addition: the
// rank the relay's source was configured with, so that a replica can see
// that its own configuration for the source agrees (a batch whose
// data_parallel_rank is nil is indexed under the configured rank, §2.1).
const (
	HeaderTopic = "Kvtwin-Topic"
	HeaderSeq   = "Kvtwin-Seq"
	HeaderEpoch = "Kvtwin-Epoch"
	HeaderGap   = "Kvtwin-Gap"
	HeaderReset = "Kvtwin-Reset"
	HeaderRank  = "Kvtwin-Rank"
	// HeaderTopicHex carries a topic that is not plain printable ASCII
	// (control bytes, non-ASCII, leading or trailing spaces: a header line
	// cannot hold them all verbatim) as lower-case hex, instead of HeaderTopic.
	HeaderTopicHex = "Kvtwin-Topic-Hex"
)

// ErrBadOption is the sentinel of every relay and replica option error; the
// error names the option, its value and the bound.
var ErrBadOption = spec.NewSentinel("bad_option", "invalid KV-event JetStream option")

// maxTokenLen bounds a source token: NATS subjects have no hard limit, but a
// token is also a consumer filter, a log field and a metrics label.
const maxTokenLen = 128

// Token is the source's subject token (§4.2): name with every byte outside
// [A-Za-z0-9_-] replaced by '_'. NATS tokens may not contain '.', '*', '>'
// or white space. Distinct names can share a token ("a.b", "a:b", "a_b");
// the relay refuses sources whose tokens collide.
func Token(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !tokenByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// Subject is the subject of the source whose token is token.
func Subject(token string) string { return SubjectPrefix + token }

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// validToken reports whether s is a non-empty token of at most maxTokenLen
// bytes of [A-Za-z0-9_-] (what Token returns for a valid source name).
func validToken(s string) bool {
	if s == "" || len(s) > maxTokenLen {
		return false
	}
	for _, c := range []byte(s) {
		if !tokenByte(c) {
			return false
		}
	}
	return true
}

// msgID is the Nats-Msg-Id of a batch: <token>.<epoch>.<seq>, so that
// JetStream's duplicate window drops a retried publish (§4.2).
func msgID(token string, epoch, seq uint64) string {
	return token + "." + strconv.FormatUint(epoch, 10) + "." + strconv.FormatUint(seq, 10)
}

// resetID is the Nats-Msg-Id of an epoch's reset message.
func resetID(token string, epoch uint64) string {
	return token + "." + strconv.FormatUint(epoch, 10) + ".reset"
}

// batchMsg is the message of one applied batch: the exact format every
// relay publishes and every replica reads (tests publish through it too).
func batchMsg(token string, rank int64, epoch, seq uint64, gap bool, topic, payload []byte) *nats.Msg {
	m := nats.NewMsg(Subject(token))
	m.Data = payload
	if plainTopic(topic) {
		m.Header.Set(HeaderTopic, string(topic))
	} else {
		m.Header.Set(HeaderTopicHex, hex.EncodeToString(topic))
	}
	m.Header.Set(HeaderSeq, strconv.FormatUint(seq, 10))
	m.Header.Set(HeaderEpoch, strconv.FormatUint(epoch, 10))
	m.Header.Set(HeaderRank, strconv.FormatInt(rank, 10))
	if gap {
		m.Header.Set(HeaderGap, "1")
	}
	m.Header.Set(nats.MsgIdHdr, msgID(token, epoch, seq))
	return m
}

// resetMsg is the message that opens epoch: a publisher restart (§3.4),
// published before the epoch's first batch, with an empty body.
func resetMsg(token string, rank int64, epoch uint64) *nats.Msg {
	m := nats.NewMsg(Subject(token))
	m.Header.Set(HeaderReset, "1")
	m.Header.Set(HeaderEpoch, strconv.FormatUint(epoch, 10))
	m.Header.Set(HeaderRank, strconv.FormatInt(rank, 10))
	m.Header.Set(nats.MsgIdHdr, resetID(token, epoch))
	return m
}

// wireMsg is a relayed message read back.
type wireMsg struct {
	token string
	reset bool
	epoch uint64
	seq   uint64
	gap   bool
	// rank is the relay's configured rank, hasRank false when the header is
	// absent (a relay older than the header, or a hand-made message).
	rank    int64
	hasRank bool
	topic   string
	body    []byte
}

// frames are the live message (§1.2) a replica hands its index.
func (m wireMsg) frames() [][]byte {
	return [][]byte{[]byte(m.topic), binary.BigEndian.AppendUint64(nil, m.seq), m.body}
}

// parseWire reads a relayed message. Errors name the header.
func parseWire(subject string, h nats.Header, body []byte) (wireMsg, error) {
	var m wireMsg
	tok, ok := strings.CutPrefix(subject, SubjectPrefix)
	if !ok || !validToken(tok) {
		return m, fmt.Errorf("subject %q: want %s<token> with a token of [A-Za-z0-9_-]", subject, SubjectPrefix)
	}
	m.token = tok
	var err error
	if m.epoch, err = strconv.ParseUint(h.Get(HeaderEpoch), 10, 64); err != nil {
		return m, fmt.Errorf("header %s %q: want a decimal uint64", HeaderEpoch, h.Get(HeaderEpoch))
	}
	if r := h.Get(HeaderRank); r != "" {
		if m.rank, err = strconv.ParseInt(r, 10, 64); err != nil || m.rank < 0 {
			return m, fmt.Errorf("header %s %q: want a decimal int >= 0", HeaderRank, r)
		}
		m.hasRank = true
	}
	switch v := h.Get(HeaderReset); v {
	case "":
	case "1":
		if len(body) != 0 {
			return m, fmt.Errorf("header %s with a body of %d bytes: want an empty body", HeaderReset, len(body))
		}
		m.reset = true
		return m, nil
	default:
		return m, fmt.Errorf("header %s %q: want 1", HeaderReset, v)
	}
	if m.seq, err = strconv.ParseUint(h.Get(HeaderSeq), 10, 64); err != nil {
		return m, fmt.Errorf("header %s %q: want a decimal uint64", HeaderSeq, h.Get(HeaderSeq))
	}
	m.gap = h.Get(HeaderGap) == "1"
	m.topic = h.Get(HeaderTopic)
	if x := h.Get(HeaderTopicHex); x != "" {
		t, err := hex.DecodeString(x)
		if err != nil {
			return m, fmt.Errorf("header %s: want hex: %v", HeaderTopicHex, err)
		}
		m.topic = string(t)
	}
	m.body = body
	return m, nil
}

// plainTopic reports whether a header line carries topic verbatim: printable
// ASCII without leading or trailing space.
func plainTopic(topic []byte) bool {
	for _, c := range topic {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	n := len(topic)
	return n == 0 || topic[0] != ' ' && topic[n-1] != ' '
}
