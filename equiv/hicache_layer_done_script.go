package equiv

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLayerDoneScript is the differential spec of hicache.layer_done_script
// (docs/spec/radix-acks.md §5.3): generated counter scripts shaped like a loader's
// life (the producer loading in order, the consumer asking per layer, with
// out-of-order completions, busy wraps and bad slots mixed in), the worked
// example, and C1–C5 read off the trace against a model of the done counts.
func HiCacheLayerDoneScript() *Spec[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput] {
	valid, invalid := counterGenerators(Coverage{})
	return &Spec[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput]{
		Op:          catalog.HiCacheLayerDoneScript(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  counterVocabulary(),
		Boundary:    counterBoundary(),
		Regressions: counterRegressions(),
		Script:      stepsOf(func(in *spec.HiCacheLayerDoneScriptInput) *[]spec.CounterStep { return &in.Steps }),
		Props: []Prop[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput]{
			{"C1-ready-implies-completed", counterReadyImpliesCompleted},
			{"C2-ready-needs-no-later-layer", counterReadyPerLayer},
			{"C3-no-consumer-always-ready", counterNoConsumerReady},
			{"C4-slot-not-reused-while-loading", counterSlotNotReused},
			{"C5-done-monotone-within-a-use", counterDoneMonotone},
		},
	}
}

// counterVocabulary is what an adapter may declare part of: the step kinds
// (none required: the layer count is the input's, not a step's).
func counterVocabulary() *Vocabulary[spec.HiCacheLayerDoneScriptInput] {
	kinds := []string{spec.CounterUpdateProducer, spec.CounterComplete, spec.CounterSetConsumer, spec.CounterReady, spec.CounterReset}
	return &Vocabulary[spec.HiCacheLayerDoneScriptInput]{
		Steps: kinds,
		Uses: func(in spec.HiCacheLayerDoneScriptInput) ([]string, []string) {
			return stepKinds(kinds, func(yield func(string) bool) {
				for _, s := range in.Steps {
					if !yield(s.Op) {
						return
					}
				}
			}), nil
		},
		Generate: counterGenerators,
	}
}

// counterGenerators are hicache.layer_done_script's generators under c.
func counterGenerators(c Coverage) (*rapid.Generator[spec.HiCacheLayerDoneScriptInput], *rapid.Generator[Bad[spec.HiCacheLayerDoneScriptInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.HiCacheLayerDoneScriptInput { return counterSteps(t, 40, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.HiCacheLayerDoneScriptInput] { return counterInvalid(t, c) })
}

// CounterSteps draws a counter script of up to maxSteps steps. A model of
// the state steers the draw toward the steps a loader makes (complete the
// producer's next layer, ask Ready of a layer near the frontier) while
// keeping some wrong ones.
func CounterSteps(t *rapid.T, maxSteps int) spec.HiCacheLayerDoneScriptInput {
	return counterSteps(t, maxSteps, Coverage{})
}

// counterSteps is CounterSteps inside c: a step of a kind c leaves out is
// drawn and dropped, neither kept nor run on the model.
func counterSteps(t *rapid.T, maxSteps int, c Coverage) spec.HiCacheLayerDoneScriptInput {
	L := rapid.IntRange(1, 5).Draw(t, "layers")
	in := spec.HiCacheLayerDoneScriptInput{Layers: L, Steps: []spec.CounterStep{}}
	m := newCounterModel(L)
	for range rapid.IntRange(0, maxSteps).Draw(t, "steps") {
		s := spec.CounterStep{Op: rapid.SampledFrom(m.likelySteps()).Draw(t, "op")}
		switch s.Op {
		case spec.CounterComplete:
			s.Slot, s.Layer = max(m.producer, 0), m.done[max(m.producer, 0)]
			if rapid.IntRange(0, 7).Draw(t, "odd_complete") == 0 {
				s.Slot, s.Layer = rapid.IntRange(-1, 3).Draw(t, "slot"), rapid.IntRange(-1, L).Draw(t, "layer")
			}
		case spec.CounterSetConsumer:
			s.Slot = m.producer
			if rapid.IntRange(0, 5).Draw(t, "odd_consumer") == 0 {
				s.Slot = rapid.IntRange(-2, 3).Draw(t, "slot")
			}
		case spec.CounterReady:
			s.Layer = rapid.IntRange(0, L-1).Draw(t, "layer")
			if rapid.IntRange(0, 9).Draw(t, "odd_layer") == 0 {
				s.Layer = rapid.SampledFrom([]int{-1, L}).Draw(t, "bad_layer")
			}
		}
		if !c.Step(s.Op) {
			continue
		}
		m.apply(s)
		in.Steps = append(in.Steps, s)
	}
	return in
}

// likelySteps weights the next step by the state, as a loader would
// act: start an op when the producer's is complete, else complete its
// layers, while the consumer asks about layers throughout.
func (m *counterModel) likelySteps() []string {
	up, done, cons, ready := spec.CounterUpdateProducer, spec.CounterComplete, spec.CounterSetConsumer, spec.CounterReady
	if m.producer < 0 || m.done[m.producer] == m.layers {
		return []string{up, up, up, cons, ready, ready, done, spec.CounterReset}
	}
	return []string{done, done, done, cons, ready, ready, ready, up}
}

// counterModel is the counter's state as §5.3 defines it, advanced by the
// steps a correct counter accepts.
type counterModel struct {
	layers             int
	producer, consumer int
	done               [spec.CounterSlots]int
}

func newCounterModel(layers int) *counterModel {
	return &counterModel{layers: layers, producer: -1, consumer: -1, done: [3]int{layers, layers, layers}}
}

// apply runs s on the model and reports what a correct counter answers:
// whether s is accepted, and for a ready step the answer.
func (m *counterModel) apply(s spec.CounterStep) (ok, ready bool) {
	switch s.Op {
	case spec.CounterUpdateProducer:
		p := (m.producer + 1) % spec.CounterSlots
		if m.done[p] < m.layers {
			return false, false
		}
		m.done[p], m.producer = 0, p
	case spec.CounterComplete:
		if s.Slot < 0 || s.Slot >= spec.CounterSlots || s.Layer != m.done[s.Slot] || s.Layer >= m.layers {
			return false, false
		}
		m.done[s.Slot]++
	case spec.CounterSetConsumer:
		if s.Slot < -1 || s.Slot >= spec.CounterSlots {
			return false, false
		}
		m.consumer = s.Slot
	case spec.CounterReady:
		if s.Layer < 0 || s.Layer >= m.layers {
			return false, false
		}
		return true, m.consumer < 0 || m.done[m.consumer] > s.Layer
	case spec.CounterReset:
		m.producer, m.consumer = -1, -1
	}
	return true, false
}

// counterInvalid draws a script inside c and breaks it once: a bad layer
// count or an unknown op, neither of which needs a declared kind.
func counterInvalid(t *rapid.T, c Coverage) Bad[spec.HiCacheLayerDoneScriptInput] {
	in := counterSteps(t, 6, c)
	if rapid.Bool().Draw(t, "bad_layers") {
		in.Layers = rapid.SampledFrom([]int{-1, 0, spec.MaxCounterLayers + 1}).Draw(t, "layers_value")
		return Bad[spec.HiCacheLayerDoneScriptInput]{in, spec.ErrBadLoadPools}
	}
	in.Steps = append(in.Steps, spec.CounterStep{Op: rapid.SampledFrom([]string{"wait_all", "Ready", ""}).Draw(t, "bad_op")})
	return Bad[spec.HiCacheLayerDoneScriptInput]{in, spec.ErrBadEnum}
}

func cstep(op string, slot, layer int) spec.CounterStep {
	return spec.CounterStep{Op: op, Slot: slot, Layer: layer}
}

func counterBoundary() []Case[spec.HiCacheLayerDoneScriptInput] {
	up, done, cons, ready := spec.CounterUpdateProducer, spec.CounterComplete, spec.CounterSetConsumer, spec.CounterReady
	return []Case[spec.HiCacheLayerDoneScriptInput]{
		{"worked-example-three-layers", catalog.LayerDoneWorkedExample()},
		{"no-consumer-always-ready", spec.HiCacheLayerDoneScriptInput{Layers: 2, Steps: []spec.CounterStep{
			cstep(up, 0, 0), cstep(ready, 0, 1), cstep(cons, -1, 0), cstep(ready, 0, 0)}}},
		{"two-ops-apart-then-busy", spec.HiCacheLayerDoneScriptInput{Layers: 1, Steps: []spec.CounterStep{
			cstep(up, 0, 0), cstep(up, 0, 0), cstep(cons, 0, 0), cstep(ready, 0, 0), cstep(up, 0, 0),
			cstep(done, 0, 0), cstep(ready, 0, 0), cstep(up, 0, 0), cstep(up, 0, 0)}}},
		{"out-of-order-and-bad-slots", spec.HiCacheLayerDoneScriptInput{Layers: 3, Steps: []spec.CounterStep{
			cstep(up, 0, 0), cstep(done, 0, 1), cstep(done, 3, 0), cstep(done, -1, 0), cstep(cons, 3, 0),
			cstep(cons, -2, 0), cstep(ready, 0, 3), cstep(ready, 0, -1), cstep(done, 1, 3)}}},
		{"reset-keeps-done-counts", spec.HiCacheLayerDoneScriptInput{Layers: 2, Steps: []spec.CounterStep{
			cstep(up, 0, 0), cstep(done, 0, 0), cstep(spec.CounterReset, 0, 0), cstep(up, 0, 0), cstep(done, 0, 1), cstep(up, 0, 0)}}},
		// §5.3's Complete failure path not pinned above (the others are: a
		// layer ahead of done, one past L): a layer behind done, here the
		// same layer completed twice.
		{"complete-repeated-layer-out-of-order", spec.HiCacheLayerDoneScriptInput{Layers: 2, Steps: []spec.CounterStep{
			cstep(up, 0, 0), cstep(done, 0, 0), cstep(done, 0, 0)}}},
	}
}

func counterRegressions() []Case[spec.HiCacheLayerDoneScriptInput] {
	// §5.4 B5.c: L = 2 and only Complete(0,0): fixed Ready(0) is true,
	// the all-layer wait says false.
	return []Case[spec.HiCacheLayerDoneScriptInput]{
		{"all-layer-wait", spec.HiCacheLayerDoneScriptInput{Layers: 2, Steps: []spec.CounterStep{
			cstep(spec.CounterUpdateProducer, 0, 0), cstep(spec.CounterSetConsumer, 0, 0),
			cstep(spec.CounterComplete, 0, 0), cstep(spec.CounterReady, 0, 0)}}},
	}
}

// counterReplay walks the trace with the model: for each step, the model
// before it, what a correct counter answers, and the step's result.
func counterReplay(in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput, f func(i int, before counterModel, s spec.CounterStep, r spec.CounterStepResult) error) error {
	if len(out.Trace) != len(in.Steps) {
		return fmt.Errorf("%d results for %d steps", len(out.Trace), len(in.Steps))
	}
	m := newCounterModel(in.Layers)
	for i, s := range in.Steps {
		before := *m
		m.apply(s)
		if err := f(i, before, s, out.Trace[i]); err != nil {
			return err
		}
	}
	return nil
}

// counterReadyImpliesCompleted is C1: Ready(l) true means the consumer's
// op completed layer l (or there is no consumer).
func counterReadyImpliesCompleted(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput) error {
	return counterReplay(in, out, func(i int, m counterModel, s spec.CounterStep, r spec.CounterStepResult) error {
		if r.Ready != nil && *r.Ready && m.consumer >= 0 && m.done[m.consumer] <= s.Layer {
			return fmt.Errorf("step %d: Ready(%d) with slot %d at %d layers done", i, s.Layer, m.consumer, m.done[m.consumer])
		}
		return nil
	})
}

// counterReadyPerLayer is C2: once layers 0..l of the consumer's op have
// landed, Ready(l) is true whatever later layers do — and a ready question
// inside [0, L) is always answered.
func counterReadyPerLayer(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput) error {
	return counterReplay(in, out, func(i int, m counterModel, s spec.CounterStep, r spec.CounterStepResult) error {
		if s.Op != spec.CounterReady || s.Layer < 0 || s.Layer >= in.Layers {
			return nil
		}
		if r.Ready == nil {
			return fmt.Errorf("step %d: Ready(%d) unanswered: %+v", i, s.Layer, r.Error)
		}
		if !*r.Ready && m.consumer >= 0 && m.done[m.consumer] > s.Layer {
			return fmt.Errorf("step %d: Ready(%d) false with %d layers of slot %d done", i, s.Layer, m.done[m.consumer], m.consumer)
		}
		return nil
	})
}

// counterNoConsumerReady is C3: with consumer -1 every layer is ready.
func counterNoConsumerReady(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput) error {
	return counterReplay(in, out, func(i int, _ counterModel, s spec.CounterStep, r spec.CounterStepResult) error {
		if r.Ready != nil && !*r.Ready && r.State.Consumer < 0 {
			return fmt.Errorf("step %d: Ready(%d) false without a consumer", i, s.Layer)
		}
		return nil
	})
}

// counterSlotNotReused is C4: the producer moves onto a slot only when its
// previous op completed every layer, and is refused (ErrSlotBusy, nothing
// changed) otherwise.
func counterSlotNotReused(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput) error {
	return counterReplay(in, out, func(i int, m counterModel, s spec.CounterStep, r spec.CounterStepResult) error {
		if s.Op != spec.CounterUpdateProducer {
			return nil
		}
		p := (m.producer + 1) % spec.CounterSlots
		busy := m.done[p] < in.Layers
		switch {
		case busy && (r.Error == nil || r.Error.Code != spec.ErrSlotBusy.Code()):
			return fmt.Errorf("step %d: slot %d reused at %d of %d layers", i, p, m.done[p], in.Layers)
		case !busy && (r.Slot == nil || *r.Slot != p):
			return fmt.Errorf("step %d: update onto complete slot %d gave %+v", i, p, r)
		}
		return nil
	})
}

// counterDoneMonotone is C5: a slot's done count only grows, by one per
// accepted Complete of that slot, until the producer starts it again at 0;
// and the reported state is the model's after every step.
func counterDoneMonotone(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput, out spec.HiCacheLayerDoneScriptOutput) error {
	prev := newCounterModel(in.Layers).done
	return counterReplay(in, out, func(i int, m counterModel, s spec.CounterStep, r spec.CounterStepResult) error {
		after := m
		after.apply(s)
		for slot, d := range r.State.Done {
			restarted := s.Op == spec.CounterUpdateProducer && r.Slot != nil && *r.Slot == slot && d == 0
			if d < prev[slot] && !restarted || d > prev[slot]+1 {
				return fmt.Errorf("step %d: slot %d done went %d → %d", i, slot, prev[slot], d)
			}
		}
		want := spec.CounterState{Layers: in.Layers, Producer: after.producer, Consumer: after.consumer, Done: after.done}
		if r.State != want {
			return fmt.Errorf("step %d: state %+v, want %+v", i, r.State, want)
		}
		prev = r.State.Done
		return nil
	})
}
