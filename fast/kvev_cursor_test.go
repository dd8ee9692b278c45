package fast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// kxStreamLog is one stream's live messages: chained stores of 4-token
// blocks, removals (interior ones included), a clear, a gap and a restart.
func kxStreamLog(stream int, n int) [][][]byte {
	var out [][][]byte
	topic := fmt.Sprintf("kv@pod%d@m", stream)
	var seq uint64
	next := uint64(1)
	var prev *uint64
	for i := range n {
		var ev []kxMp
		switch {
		case i%7 == 6:
			ev = append(ev, kxEvRemoved([]uint64{next - 2, next - 5}, kxEvOpt{}))
		case i%23 == 22:
			ev = append(ev, kxEvCleared())
			prev = nil
		default:
			hs := []uint64{next, next + 1, next + 2}
			toks := kxSeqTokens(uint32(i%5), 12)
			ev = append(ev, kxEvStored(hs, prev, toks, 4, kxEvOpt{}))
			prev = new(next + 2)
			next += 3
			if i%5 == 4 {
				prev = nil
			}
		}
		if i == n/2 {
			seq += 2 // a gap: the stream has no replay endpoint
		}
		out = append(out, kxLiveFrames(topic, seq, kxBatch(new(int64(stream%2)), ev...)))
		seq++
	}
	return out
}

// Streams fed from their own goroutines while scores, states and digests
// run: the race detector watches, and the end state equals a sequential
// run of the same per-stream logs.
func TestKVEvConcurrentStreamsAndScores(t *testing.T) {
	defer goleak.VerifyNone(t)
	const nStreams, nMsgs = 6, 300
	var streams []spec.KVEvStream
	logs := make([][][][]byte, nStreams)
	for i := range nStreams {
		streams = append(streams, spec.KVEvStream{Name: fmt.Sprintf("s%d", i)})
		logs[i] = kxStreamLog(i, nMsgs)
	}
	par, err := newKVIndex(spec.KVEvConfig{}, streams, fault.KVEv{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range nStreams {
		wg.Go(func() {
			for _, m := range logs[i] {
				if r := par.Live(streams[i].Name, m); r.Error != nil || len(r.Errors) > 0 {
					t.Errorf("stream %d: %+v", i, r)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	prompt := make([]int64, 12)
	for i := range prompt {
		prompt[i] = int64(i % 5)
	}
	long := make([]int64, 16*4096) // long enough for the pipelined, parallel walks
	for i := range long {
		long[i] = int64(i % 5)
	}
	for k := range 4 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				switch k {
				case 0:
					if _, err := par.Score(spec.KVEvScoreQuery{Tokens: prompt}); err != nil {
						t.Error(err)
						return
					}
				case 1:
					par.Score(spec.KVEvScoreQuery{Tokens: prompt, Exact: true})
					par.Digest()
				case 2:
					if _, err := par.Score(spec.KVEvScoreQuery{Tokens: long}); err != nil {
						t.Error(err)
						return
					}
				default:
					par.State()
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()

	seq, _ := newKVIndex(spec.KVEvConfig{}, streams, fault.KVEv{})
	for i := range nStreams {
		for _, m := range logs[i] {
			seq.Live(streams[i].Name, m)
		}
	}
	kxCheckKVInvariants(t, par)
	a, _ := json.Marshal(par.State())
	b, _ := json.Marshal(seq.State())
	if !bytes.Equal(a, b) {
		t.Fatal("concurrent and sequential runs differ")
	}
	s, _ := par.Score(spec.KVEvScoreQuery{Tokens: prompt})
	if len(s) != nStreams {
		t.Fatalf("scores %s", kxFmtScores(s))
	}
}
