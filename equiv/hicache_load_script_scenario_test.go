package equiv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestLoadScenarios runs the narrated §5.4 scenarios (testdata/load_*.txt)
// on the reference and on the fast twin: both must print the fixed
// behaviour each file records.
//
// Commands: pools, begin, submit, end, cancel, builds, fallbacks, device
// (prepared loads) and counter, update-producer, complete, set-consumer,
// ready, wait (the LayerDoneCounter). Index lists are ranges: host=(8-15,0-3).
func TestLoadScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/load_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no load scenarios: %v", err)
	}
	twins := []struct {
		name       string
		newLoader  spec.NewLoaderFunc
		newCounter spec.NewLayerDoneCounterFunc
	}{{"ref", ref.NewLoader, ref.NewLayerDoneCounter}, {"fast", fast.NewLoader, fast.NewLayerDoneCounter}}
	for _, f := range files {
		for _, tw := range twins {
			t.Run(filepath.Base(f)+"/"+tw.name, func(t *testing.T) {
				s := &loadScenario{newLoader: tw.newLoader, newCounter: tw.newCounter}
				datadriven.RunTest(t, f, s.run)
			})
		}
	}
}

// loadScenario is one scenario's objects: a loader, its descriptors by op
// id (the latest begun for each), and a counter.
type loadScenario struct {
	newLoader  spec.NewLoaderFunc
	newCounter spec.NewLayerDoneCounterFunc
	loader     spec.Loader
	descs      map[uint64]spec.LoadDescriptor
	last       uint64
	counter    spec.LayerDoneCounter
}

func (s *loadScenario) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "pools":
		return s.pools(t, d)
	case "begin":
		return s.begin(t, d)
	case "submit", "end", "cancel", "builds":
		return s.onDesc(t, d)
	case "fallbacks":
		return fmt.Sprintf("%d fallback events %v", len(s.loader.Fallbacks()), s.loader.Fallbacks())
	case "device":
		return s.device(t, d)
	case "counter":
		var layers int
		d.ScanArgs(t, "layers", &layers)
		c, err := s.newCounter(layers)
		if err != nil {
			return errLine(err)
		}
		s.counter = c
		return fmt.Sprintf("%+v", c.State())
	case "update-producer", "complete", "set-consumer", "ready", "wait":
		return s.onCounter(t, d)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (s *loadScenario) pools(t *testing.T, d *datadriven.TestData) string {
	var p spec.LoadPools
	d.ScanArgs(t, "layers", &p.Layers)
	d.ScanArgs(t, "host_slots", &p.HostSlots)
	d.ScanArgs(t, "dev_slots", &p.DevSlots)
	d.ScanArgs(t, "kv_bytes", &p.KVBytes)
	d.MaybeScanArgs(t, "index_bytes", &p.IndexBytes)
	if d.HasArg("index_layers") {
		for _, v := range ranges(t, d, "index_layers") {
			p.IndexLayers = append(p.IndexLayers, int(v))
		}
	}
	ld, err := s.newLoader(spec.DefaultLimits(), p)
	if err != nil {
		return errLine(err)
	}
	s.loader, s.descs = ld, map[uint64]spec.LoadDescriptor{}
	return fmt.Sprintf("%d layers; host %d slots, device %d slots; %d KV bytes per token; index layers %v", p.Layers, p.HostSlots, p.DevSlots, p.KVBytes, p.IndexLayers)
}

func (s *loadScenario) begin(t *testing.T, d *datadriven.TestData) string {
	var op uint64
	var ps int
	d.ScanArgs(t, "op", &op)
	d.ScanArgs(t, "ps", &ps)
	b := spec.LoadBackend{Unavailable: d.HasArg("unavailable")}
	var policy string
	if d.MaybeScanArgs(t, "policy", &policy) {
		b.Policy = spec.LoadPolicy(policy)
	}
	desc, err := s.loader.BeginLoad(op, ranges(t, d, "host"), ranges(t, d, "dev"), ps, b)
	if err != nil {
		return errLine(err)
	}
	s.descs[op], s.last = desc, op
	var runs []string
	for _, r := range desc.Runs() {
		runs = append(runs, fmt.Sprintf("host %d → device %d ×%d", r.SrcStart, r.DstStart, r.Count))
	}
	return fmt.Sprintf("descriptor #%d for op %d (fallback %v): runs [%s]", desc.Serial(), op, desc.Fallback(), strings.Join(runs, ", "))
}

// onDesc runs a descriptor call on desc=N's descriptor (default: the last
// begun), submitting as op=N (default: the descriptor's op).
func (s *loadScenario) onDesc(t *testing.T, d *datadriven.TestData) string {
	key := s.last
	d.MaybeScanArgs(t, "desc", &key)
	desc := s.descs[key]
	if desc == nil {
		d.Fatalf(t, "no descriptor for op %d", key)
	}
	switch d.Cmd {
	case "builds":
		return fmt.Sprintf("builds %d", desc.Builds())
	case "end":
		return okOr(desc.EndLoad())
	case "cancel":
		return okOr(desc.Cancel())
	}
	op := desc.OpID()
	d.MaybeScanArgs(t, "op", &op)
	var out []string
	for _, l := range ranges(t, d, "layers") {
		out = append(out, fmt.Sprintf("layer %d: %s", l, okOr(desc.SubmitLayer(op, int(l)))))
	}
	return strings.Join(out, "\n")
}

// device names, for each device page listed, the host page whose bytes it
// holds in layer layer (page size ps), or "stale".
func (s *loadScenario) device(t *testing.T, d *datadriven.TestData) string {
	var layer, ps int
	d.ScanArgs(t, "layer", &layer)
	d.ScanArgs(t, "ps", &ps)
	a := s.loader.Arena()
	pb := int64(ps) * a.Pools.KVBytes
	var out []string
	for _, dp := range ranges(t, d, "pages") {
		got := a.DevKV[layer][dp*pb : (dp+1)*pb]
		from := "stale (no load wrote it)"
		for hp := int64(0); (hp+1)*pb <= int64(len(a.HostKV[layer])); hp++ {
			if bytes.Equal(got, a.HostKV[layer][hp*pb:(hp+1)*pb]) {
				from = fmt.Sprintf("host page %d", hp)
				break
			}
		}
		out = append(out, fmt.Sprintf("device page %d (layer %d): %s", dp, layer, from))
	}
	return strings.Join(out, "\n")
}

func (s *loadScenario) onCounter(t *testing.T, d *datadriven.TestData) string {
	c := s.counter
	var slot, layer int
	d.MaybeScanArgs(t, "slot", &slot)
	d.MaybeScanArgs(t, "layer", &layer)
	switch d.Cmd {
	case "update-producer":
		p, err := c.UpdateProducer()
		if err != nil {
			return errLine(err)
		}
		return fmt.Sprintf("slot %d; %+v", p, c.State())
	case "complete":
		return okOr(c.Complete(slot, layer)) + fmt.Sprintf("; %+v", c.State())
	case "set-consumer":
		return okOr(c.SetConsumer(slot))
	case "ready":
		ok, err := c.Ready(layer)
		if err != nil {
			return errLine(err)
		}
		return fmt.Sprintf("Ready(%d) = %v", layer, ok)
	}
	// wait: nothing else runs, so a layer that is not ready now never
	// becomes ready; the short deadline makes that visible. A layer outside
	// [0, L) is rejected at once (§5.3 amendment).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.WaitUntil(ctx, layer); errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("WaitUntil(%d) still blocked: %v", layer, err)
	} else if err != nil {
		return errLine(err)
	}
	return fmt.Sprintf("WaitUntil(%d) returned: layer %d landed", layer, layer)
}

// ranges parses key=(a-b,c,…) into the listed values, ranges inclusive.
func ranges(t *testing.T, d *datadriven.TestData, key string) []int64 {
	arg, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing %s", key)
	}
	vs := []int64{}
	for _, v := range arg.Vals {
		lo, hi, isRange := strings.Cut(v, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		b := a
		if isRange && err == nil {
			b, err = strconv.ParseInt(hi, 10, 64)
		}
		if err != nil {
			d.Fatalf(t, "%s: %v", key, err)
		}
		for x := a; x <= b; x++ {
			vs = append(vs, x)
		}
	}
	return vs
}

func okOr(err error) string {
	if err != nil {
		return errLine(err)
	}
	return "ok"
}

func errLine(err error) string {
	e := spec.ErrorObjectOf(err)
	return fmt.Sprintf("error %s: %s", e.Code, e.Message)
}
