package catalog_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

var twinImpls = []catalog.Impl{catalog.Ref, catalog.Fast}

// sameOnEveryImpl runs run on ref and fast and wants one canonical result,
// equal to want (the op's ref twin on the same input).
func sameOnEveryImpl(t *testing.T, name string, want []byte, run func(catalog.Impl) ([]byte, error)) {
	t.Helper()
	for _, impl := range twinImpls {
		got, err := run(impl)
		if err != nil {
			t.Errorf("%s on %s: %v", name, impl, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s on %s:\n got  %s\n want %s", name, impl, got, want)
		}
	}
}

// TestStateTwinsDriveTheirScriptOpsIdentically: each constructor lookup
// returns, for ref and fast, a constructor that gives the script op's ref
// result on its sample input when the shared driver runs it.
func TestStateTwinsDriveTheirScriptOpsIdentically(t *testing.T) {
	lim := spec.DefaultLimits()
	canon := func(name string, impl catalog.Impl) func(any, error) []byte {
		return func(out any, err error) []byte {
			if err != nil {
				t.Errorf("%s on %s: %v", name, impl, err)
			}
			return catalog.Canonical(out, err)
		}
	}
	radix := catalog.RadixScript()
	sameOnEveryImpl(t, "radix tree", catalog.Canonical(radix.Ref(lim, radix.Sample)), func(impl catalog.Impl) ([]byte, error) {
		f, err := catalog.RadixTree(impl)
		if err != nil {
			return nil, err
		}
		return canon("radix tree", impl)(ref.RunRadixScript(lim, radix.Sample, f)), nil
	})
	ack := catalog.HiCacheAckScript()
	sameOnEveryImpl(t, "ack queue", catalog.Canonical(ack.Ref(lim, ack.Sample)), func(impl catalog.Impl) ([]byte, error) {
		f, err := catalog.AckQueue(impl)
		if err != nil {
			return nil, err
		}
		return canon("ack queue", impl)(ref.RunHiCacheAckScript(lim, ack.Sample, f)), nil
	})
	load := catalog.HiCacheLoadScript()
	sameOnEveryImpl(t, "loader", catalog.Canonical(load.Ref(lim, load.Sample)), func(impl catalog.Impl) ([]byte, error) {
		f, err := catalog.Loader(impl)
		if err != nil {
			return nil, err
		}
		return canon("loader", impl)(ref.RunHiCacheLoadScript(lim, load.Sample, f)), nil
	})
	done := catalog.HiCacheLayerDoneScript()
	sameOnEveryImpl(t, "layer-done counter", catalog.Canonical(done.Ref(lim, done.Sample)), func(impl catalog.Impl) ([]byte, error) {
		f, err := catalog.LayerDoneCounter(impl)
		if err != nil {
			return nil, err
		}
		return canon("layer-done counter", impl)(ref.RunHiCacheLayerDoneScript(done.Sample, f)), nil
	})
	perLayer := catalog.TransferPerLayerScript()
	sameOnEveryImpl(t, "per-layer manager", catalog.Canonical(perLayer.Ref(lim, perLayer.Sample)), func(impl catalog.Impl) ([]byte, error) {
		f, err := catalog.PerLayerManager(impl)
		if err != nil {
			return nil, err
		}
		return canon("per-layer manager", impl)(ref.RunTransferPerLayerScript(lim, perLayer.Sample, f)), nil
	})
}

// TestRadixTreeTwinsInsertAndMatchIdentically builds a tree with each
// constructor and drives it directly, as the prefix pools and the replay do.
func TestRadixTreeTwinsInsertAndMatchIdentically(t *testing.T) {
	var want []byte
	for _, impl := range twinImpls {
		newTree, err := catalog.RadixTree(impl)
		if err != nil {
			t.Fatalf("RadixTree(%s) = %v", impl, err)
		}
		tree, err := newTree(spec.TreeConfig{PageSize: 2, Policy: spec.PolicyLRU})
		if err != nil {
			t.Fatal(err)
		}
		var trace []int
		for _, key := range [][]spec.Unit{{1, 2, 3, 4}, {1, 2, 5, 6}} {
			n, err := tree.Insert(spec.RadixKey{Units: key}, nil, 0)
			if err != nil {
				t.Fatalf("%s: insert %v: %v", impl, key, err)
			}
			trace = append(trace, n)
		}
		m, err := tree.MatchPrefix(spec.RadixKey{Units: []spec.Unit{1, 2, 5, 6, 9}})
		ev, everr := tree.Evict(2)
		got := catalog.Canonical([]any{trace, m, err, ev, everr, tree.State()}, nil)
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s tree:\n got  %s\n want %s (ref)", impl, got, want)
		}
		if len(m.Indices) != 4 {
			t.Errorf("%s: matched %v, want the 4 units of two whole pages", impl, m.Indices)
		}
	}
}

// TestPreflightTwinsAreTheServingOpsTwins: the preflight functions of ref
// and fast answer the serving ops' samples as the ops' ref twins do.
func TestPreflightTwinsAreTheServingOpsTwins(t *testing.T) {
	lim := spec.DefaultLimits()
	norm, length, body := catalog.ServingChatNormalize(), catalog.ServingValidateInputLength(), catalog.ServingErrorBody()
	want := catalog.Canonical([]any{
		catalog.Canonical(norm.Ref(lim, norm.Sample)),
		catalog.Canonical(length.Ref(lim, length.Sample)),
		catalog.Canonical(body.Ref(lim, body.Sample)),
	}, nil)
	sameOnEveryImpl(t, "preflight", want, func(impl catalog.Impl) ([]byte, error) {
		tw, err := catalog.Preflight(impl)
		if err != nil {
			return nil, err
		}
		return catalog.Canonical([]any{
			catalog.Canonical(tw.Normalize(lim, norm.Sample)),
			catalog.Canonical(tw.InputLength(lim, length.Sample)),
			catalog.Canonical(tw.ErrorBody(lim, body.Sample)),
		}, nil), nil
	})
}

// TestTwinLookupsRefuseCUDAAndUnknownNamesSayingWhy: no lookup falls back;
// cuda wraps ErrImplUnavailable, any other name ErrUnknownImpl, and the
// message names what was asked for and why it is missing.
func TestTwinLookupsRefuseCUDAAndUnknownNamesSayingWhy(t *testing.T) {
	lookups := []struct {
		name string
		get  func(catalog.Impl) error
		says string
	}{
		{"RadixTree", func(i catalog.Impl) error { _, err := catalog.RadixTree(i); return err }, "radix tree (radix.script)"},
		{"AckQueue", func(i catalog.Impl) error { _, err := catalog.AckQueue(i); return err }, "write-ack queue (hicache.ack_script)"},
		{"Loader", func(i catalog.Impl) error { _, err := catalog.Loader(i); return err }, "load descriptors (hicache.load_script)"},
		{"LayerDoneCounter", func(i catalog.Impl) error { _, err := catalog.LayerDoneCounter(i); return err }, "layer-done counter (hicache.layer_done_script)"},
		{"PerLayerManager", func(i catalog.Impl) error { _, err := catalog.PerLayerManager(i); return err }, "per-layer transfer manager (transfer.per_layer_script)"},
		{"Preflight", func(i catalog.Impl) error { _, err := catalog.Preflight(i); return err }, "preflight: serving.chat_normalize"},
	}
	for _, l := range lookups {
		for _, impl := range twinImpls {
			if err := l.get(impl); err != nil {
				t.Errorf("%s(%s) = %v", l.name, impl, err)
			}
		}
		err := l.get(catalog.CUDA)
		if !errors.Is(err, catalog.ErrImplUnavailable) {
			t.Errorf("%s(cuda) = %v, want ErrImplUnavailable", l.name, err)
		}
		if err != nil && (!strings.Contains(err.Error(), l.says) || !strings.Contains(err.Error(), "cuda")) {
			t.Errorf("%s(cuda): %q does not name %q and cuda", l.name, err, l.says)
		}
		if l.name != "Preflight" && err != nil && !strings.Contains(err.Error(), "no CUDA twin") {
			t.Errorf("%s(cuda): %q does not say there is no CUDA twin", l.name, err)
		}
		err = l.get("gpu")
		if !errors.Is(err, catalog.ErrUnknownImpl) || !strings.Contains(err.Error(), `"gpu"`) || !strings.Contains(err.Error(), l.says) {
			t.Errorf(`%s("gpu") = %v, want ErrUnknownImpl naming %q and "gpu"`, l.name, err, l.says)
		}
	}
}
