package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvtwin/kvtwin/events/zmq"
)

// This file builds the hostile messages the soak's third publisher mixes
// into its stream: raw ZeroMQ frames sent verbatim by the script's
// "frames" command, so no msgpack library smooths them over
// (docs/spec/kv-events.md §1.2, §2.10 A6, A7). Each must be refused,
// counted and survived; the other sources must not notice.

// evHostileKind is one kind of hostile message.
type evHostileKind int

const (
	evFrameCount evHostileKind = iota // two or four frames instead of three
	evSeqWidth                        // a seq frame of 4 or 9 bytes
	evGarbage                         // a payload that is no msgpack value (0xc1 is never used)
	evTruncated                       // an events array declaring 65,535 events with none following
	evDeep                            // one event nested 65,536 deep, arrays or maps
	evHugeCount                       // --events-huge-events events in one message, within the frame cap
	evSeqJump                         // a valid batch at the next seq + 2^63
	evOwner                           // a store for another source's engine, under its topic
	evRankCycle                       // a burst of empty batches, each on a DP rank not seen before
	numEvHostile
)

func (k evHostileKind) String() string {
	return [...]string{"frame-count", "seq-width", "garbage", "truncated", "deep", "huge-count", "seq-jump", "owner", "rank-cycle"}[k]
}

// deepNesting is how deep a deep message nests: far past the decoder's 32
// (spec A6), 64 KiB of bytes.
const deepNesting = 1 << 16

// rankBurst is how many rank-cycle batches one turn sends: more than the
// hostile source's engine share (spec A2, A5: 256 engines over the soak's
// three sources is 85 each), since its seq jumps restart its stream, which
// gives the share back, once per round of kinds. So every burst shows a
// source that cycles through DP ranks refused for its engines while the
// other sources keep theirs (issue 27, finding 2).
const rankBurst = 128

// firstCycledRank is the first DP rank a rank-cycle batch names, far from
// the ranks the hostile source's benign batches use.
const firstCycledRank = 1000

// hugeEventBytes is one event of a huge-count message: ["x"], an unknown
// one-byte tag the index would skip (spec §1.4 rule 2), 3 bytes of msgpack.
const hugeEventBytes = "91a178"

// maxHugeEvents is the most events a huge-count message may carry and stay
// within the subscriber's frame cap (the batch head is 15 bytes, and a
// larger message is cut at its header, never decoded: it would test
// nothing).
func maxHugeEvents() int { return int((zmq.DefaultOptions().MaxMessageBytes - 64) / 3) }

// batchTS is every batch's ts: informational only (spec §1.3).
const batchTS = 1757500000.25

// hostileEvents builds the hostile messages of one source.
type hostileEvents struct {
	topic      string        // the source's own topic
	ownerTopic string        // another source's topic, for evOwner
	owner      *pinnedPrompt // the prompt evOwner stores under ownerTopic
	hugeEvents int
	rng        *rand.Rand
	turn       int   // alternates the two shapes of frame-count, seq-width and deep
	cycled     int64 // rank-cycle batches built so far: the next one's rank is firstCycledRank + cycled
}

// needsSeq reports whether the kind is a batch at the publisher's next seq
// (the driver draws one with "drop" first); the others reuse the next seq
// without consuming it (malformed frames do not move the cursor) or jump.
func (k evHostileKind) needsSeq() bool {
	return k == evGarbage || k == evTruncated || k == evDeep || k == evHugeCount || k == evOwner || k == evRankCycle
}

// frames is the "frames" command's list for kind: each frame hex, or
// [hex, n] pieces. seq is the seq to stamp (the drawn one, or the next).
func (h *hostileEvents) frames(kind evHostileKind, seq uint64) ([]any, error) {
	h.turn++
	topic := hex.EncodeToString([]byte(h.topic))
	seqHex := seqFrame(seq)
	empty := hex.EncodeToString(emptyBatch())
	switch kind {
	case evFrameCount:
		if h.turn%2 == 0 {
			return []any{topic, seqHex}, nil
		}
		return []any{topic, seqHex, empty, "00"}, nil
	case evSeqWidth:
		if h.turn%2 == 0 {
			return []any{topic, seqHex[:8], empty}, nil
		}
		return []any{topic, seqHex + "00", empty}, nil
	case evGarbage:
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(h.rng.Uint32())
		}
		b[0] = 0xc1
		return []any{topic, seqHex, hex.EncodeToString(b)}, nil
	case evTruncated:
		head := append(mpFloat64(append([]byte(nil), 0x93), batchTS), 0xdc, 0xff, 0xff)
		return []any{topic, seqHex, hex.EncodeToString(head)}, nil
	case evDeep:
		return []any{topic, seqHex, h.deepPayload()}, nil
	case evHugeCount:
		head := mpArrayHeader(mpFloat64(append([]byte(nil), 0x93), batchTS), h.hugeEvents)
		return []any{topic, seqHex, []any{[]any{hex.EncodeToString(head), 1}, []any{hugeEventBytes, h.hugeEvents}, []any{"00", 1}}}, nil
	case evSeqJump:
		return []any{topic, seqFrame(seq + 1<<63), empty}, nil
	case evRankCycle:
		b, err := msgpack.Marshal([]any{batchTS, []any{}, firstCycledRank + h.cycled})
		if err != nil {
			return nil, fmt.Errorf("encode a rank-cycle batch: %w", err)
		}
		h.cycled++
		return []any{topic, seqHex, hex.EncodeToString(b)}, nil
	}
	payload, err := h.ownerPayload()
	if err != nil {
		return nil, err
	}
	return []any{hex.EncodeToString([]byte(h.ownerTopic)), seqHex, hex.EncodeToString(payload)}, nil
}

// deepPayload nests one event deepNesting levels: arrays of one, or maps
// of one key, by turns.
func (h *hostileEvents) deepPayload() []any {
	head := hex.EncodeToString(append(mpFloat64(append([]byte(nil), 0x93), batchTS), 0x91))
	if h.turn%2 == 0 {
		return []any{[]any{head, 1}, []any{"91", deepNesting}, []any{"9000", 1}}
	}
	return []any{[]any{head, 1}, []any{"81a16b", deepNesting}, []any{"c000", 1}}
}

// ownerPayload is a valid batch storing the owner prompt whole at the
// root: accepted, it would give the pinned engine blocks its own publisher
// never sent, which the score checks would see. It is the one hostile
// message a msgpack encoder can write, so one does.
func (h *hostileEvents) ownerPayload() ([]byte, error) {
	p := h.owner
	stored := []any{"BlockStored", p.hashes, nil, p.tokens, p.engine.pageSize, nil, "GPU"}
	b, err := msgpack.Marshal([]any{batchTS, []any{stored}, p.engine.rank})
	if err != nil {
		return nil, fmt.Errorf("encode the owner batch: %w", err)
	}
	return b, nil
}

// seqFrame is seq as the 8-byte big-endian frame, in hex.
func seqFrame(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return hex.EncodeToString(b[:])
}

// emptyBatch is [ts, [], 0]: a valid batch of no events.
func emptyBatch() []byte { return append(mpFloat64([]byte{0x93}, batchTS), 0x90, 0x00) }

// The two msgpack headers the hostile messages write by hand: an encoder
// writes a header only together with the elements it declares, and these
// messages declare elements that never follow or repeat one a million
// times in the script (docs/decisions.md).

func mpArrayHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func mpFloat64(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

// checkHugeEvents bounds --events-huge-events by the frame cap.
func checkHugeEvents(n int) error {
	if n < 1 || n > maxHugeEvents() {
		return fmt.Errorf("--events-huge-events %d: want 1 to %d (a message past the subscriber's %d-byte frame cap is cut unread)",
			n, maxHugeEvents(), zmq.DefaultOptions().MaxMessageBytes)
	}
	return nil
}
