package scaleout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file is the JetStream applier's part of the class "a batch
// redelivered at the same sequence through every consumer" of issue 30
// (item 7), with the rest of the replica apply rule around it
// (docs/spec/kv-events.md §4.3 and §4.4, "Replica apply rule, per source
// token"). The bug zoo's component mutants of the applier
// (equiv/mutants.Components) must each fail the same check.

// callLog is an index that records the calls an applier makes, as
// "live:<seq>" and "restart", in front of the reference index.
type callLog struct {
	spec.KVEvIndex
	calls []string
}

func (c *callLog) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	c.calls = append(c.calls, fmt.Sprintf("live:%d", binary.BigEndian.Uint64(frames[1])))
	return c.KVEvIndex.Live(stream, frames)
}

func (c *callLog) Restart(stream string) spec.KVEvStepResult {
	c.calls = append(c.calls, "restart")
	return c.KVEvIndex.Restart(stream)
}

// applyFunc applies one relayed message as a replica does; it reports
// whether the message was for a source the replica serves.
type applyFunc func(m wireMsg) bool

// newApplyFunc builds an applier over ix: the production applier, or a
// component mutant wrapping it.
type newApplyFunc func(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc

func productionApply(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc {
	return newApplier(ix, slog.New(slog.DiscardHandler), streams).apply
}

// emptyBatch is a batch of no event (§1.3: [ts, [], dp_rank 0]).
var emptyBatch = []byte{0x93, 0xcb, 0x41, 0xda, 0x30, 0x54, 0x98, 0x10, 0x00, 0x00, 0x90, 0x00}

func relayedBatch(epoch, seq uint64) wireMsg {
	return wireMsg{token: "s", epoch: epoch, seq: seq, topic: "kv", body: emptyBatch}
}

// checkApplyRule feeds one source's messages through an applier built by
// newApply and compares the index calls with the ones §4.4's rule gives,
// derived by hand beside each message.
func checkApplyRule(newApply newApplyFunc) error {
	streams := []spec.KVEvStream{{Name: "s"}}
	inner, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		return err
	}
	ix := &callLog{KVEvIndex: inner}
	apply := newApply(ix, streams)
	reset := func(epoch uint64) wireMsg { return wireMsg{token: "s", reset: true, epoch: epoch} }
	gapFlagged := relayedBatch(3, 6)
	gapFlagged.gap = true
	steps := []struct {
		m    wireMsg
		want string // the calls §4.4 makes of it
	}{
		{relayedBatch(1, 0), "live:0"},                            // the first message of the source: Live
		{relayedBatch(1, 1), "live:1"},                            // the next seq of its epoch: Live
		{relayedBatch(1, 1), ""},                                  // redelivered at the same seq: a duplicate, dropped
		{relayedBatch(1, 0), ""},                                  // below the last seq of its epoch: a duplicate, dropped
		{relayedBatch(1, 3), "live:3"},                            // a seq jump: Live (the index finds the gap, §3.3)
		{reset(2), "restart"},                                     // a reset of a new epoch: Restart
		{reset(2), ""},                                            // the same reset again: a duplicate, dropped
		{relayedBatch(2, 0), "live:0"},                            // the new epoch's first batch: Live
		{relayedBatch(2, 0), ""},                                  // redelivered at the same seq: dropped
		{relayedBatch(3, 5), "restart live:5"},                    // a new epoch whose reset was lost: Restart, then Live
		{wireMsg{token: "other", epoch: 1, body: emptyBatch}, ""}, // a source not served: no call
		{gapFlagged, "live:6"},                                    // Kvtwin-Gap is counted, not acted on: Live
		{relayedBatch(3, 6), ""},                                  // the flagged batch redelivered: dropped
	}
	var errs []error
	for i, s := range steps {
		before := len(ix.calls)
		served := apply(s.m)
		got := strings.Join(ix.calls[before:], " ")
		if got != s.want {
			errs = append(errs, fmt.Errorf("message %d (epoch %d, seq %d, reset %v, gap %v): index calls %q, want %q",
				i, s.m.epoch, s.m.seq, s.m.reset, s.m.gap, got, s.want))
		}
		if served != (s.m.token == "s") {
			errs = append(errs, fmt.Errorf("message %d for %q: reported served = %v", i, s.m.token, served))
		}
	}
	return errors.Join(errs...)
}

// applierMutants are the bug zoo's mutants of the JetStream applier (killed
// by TestJetStreamApplierDropsABatchRedeliveredAtTheSameSeq): each wraps
// the production applier to put one plausible bug back.
func applierMutants() map[string]newApplyFunc {
	return map[string]newApplyFunc{
		// no duplicate check: a batch redelivered at or below the last seq
		// of its epoch reaches the index, which takes it for a publisher
		// restart (§3.1 step 2) and drops the source's engines
		"jetstream-applier-reapplies-redelivered-batch": func(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc {
			apply := productionApply(ix, streams)
			last := map[string][2]uint64{} // token → epoch, seq of the last batch
			return func(m wireMsg) bool {
				if l, ok := last[m.token]; ok && !m.reset && l[0] == m.epoch && m.seq <= l[1] && m.token == "s" {
					ix.Live("s", m.frames())
					return true
				}
				if !m.reset {
					last[m.token] = [2]uint64{m.epoch, m.seq}
				}
				return apply(m)
			}
		},
		// the epoch is ignored: batches are compared by seq alone, so a
		// publisher restart's batches (a new epoch, seqs from 0 again) are
		// dropped as duplicates and its reset as a repeat
		"jetstream-applier-ignores-epoch": func(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc {
			apply := productionApply(ix, streams)
			first := map[string]uint64{}
			return func(m wireMsg) bool {
				if e, ok := first[m.token]; ok {
					m.epoch = e
				} else {
					first[m.token] = m.epoch
				}
				return apply(m)
			}
		},
		// Kvtwin-Gap is acted on: the flagged batch's source is restarted,
		// dropping engines the seq jump alone would only mark stale
		"jetstream-applier-restarts-on-gap-flag": func(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc {
			apply := productionApply(ix, streams)
			return func(m wireMsg) bool {
				if m.gap && m.token == "s" {
					ix.Restart("s")
				}
				return apply(m)
			}
		},
		// a duplicate reset (a publish retried past the duplicate window) is
		// applied again: the source restarts a second time and loses the
		// batches of its epoch applied between the two copies
		"jetstream-applier-reapplies-duplicate-reset": func(ix spec.KVEvIndex, streams []spec.KVEvStream) applyFunc {
			apply := productionApply(ix, streams)
			resets := map[[2]uint64]bool{}
			return func(m wireMsg) bool {
				if m.reset && m.token == "s" {
					if resets[[2]uint64{0, m.epoch}] {
						ix.Restart("s")
					}
					resets[[2]uint64{0, m.epoch}] = true
				}
				return apply(m)
			}
		},
	}
}

// TestJetStreamApplierDropsABatchRedeliveredAtTheSameSeq: a replica's
// applier follows §4.4's rule on one source's messages, each expected call
// derived by hand from the rule: a batch redelivered at its seq (or below
// it) in its epoch is dropped, a reset is a Restart once per epoch, a batch
// of a new epoch whose reset was lost is preceded by a Restart, a seq jump
// reaches the index, Kvtwin-Gap is not acted on, another source's message
// makes no call; and every component mutant of the applier fails the same
// check.
func TestJetStreamApplierDropsABatchRedeliveredAtTheSameSeq(t *testing.T) {
	if err := checkApplyRule(productionApply); err != nil {
		t.Error(err)
	}
	zoo := applierMutants()
	for name, m := range zoo {
		if err := checkApplyRule(m); err == nil {
			t.Errorf("component mutant %s survived", name)
		} else {
			t.Logf("%s killed: %v", name, err)
		}
	}
	var registered []string
	for _, c := range mutants.Components() {
		if c.KilledBy == "TestJetStreamApplierDropsABatchRedeliveredAtTheSameSeq" {
			registered = append(registered, c.Name)
		}
	}
	slices.Sort(registered)
	if names := slices.Sorted(maps.Keys(zoo)); !slices.Equal(registered, names) {
		t.Errorf("equiv/mutants.Components lists %v as killed by this test; it runs %v", registered, names)
	}
}
