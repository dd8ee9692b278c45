package ref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// The hicache.load_script op (docs/spec/radix-acks.md §5.2): a list of load
// operations (batches) against one loader, each begun, submitted layer by
// layer and ended, with optional misuse steps; the output is each op's
// descriptor facts, the fallback log and the device bytes, so the
// descriptor lifecycle gets fixtures and an HTTP endpoint like every pure op.

// maxInlineDeviceBytes bounds the device arenas whose bytes the script
// output carries (fixtures stay small; larger arenas give the digest only).
const maxInlineDeviceBytes = 4096

// validateLoadScript rejects a script that cannot run: bad pools, an
// unknown misuse kind (ErrBadEnum) or a misuse layer outside [0, layers]
// (ErrLayerOutOfOrder). Bad indices, page sizes and policies are the ops'
// own refusals, recorded in the trace.
func validateLoadScript(lim spec.Limits, in spec.HiCacheLoadScriptInput) error {
	if err := validateLoadPools(lim, in.Pools); err != nil {
		return prefixField(err, "pools.")
	}
	for i, op := range in.Ops {
		for j, m := range op.Misuse {
			at := fmt.Sprintf("ops[%d].misuse[%d]", i, j)
			switch m.Kind {
			case spec.MisuseOtherOp, spec.MisuseSkipLayer, spec.MisuseEndEarly, spec.MisuseCancel, spec.MisuseReusePrevious:
			default:
				return spec.Reject(spec.ErrBadEnum, at+".kind", m.Kind, "one of other_op, skip_layer, end_early, cancel, reuse_previous")
			}
			if m.At < 0 || m.At > in.Pools.Layers {
				return spec.Reject(spec.ErrLayerOutOfOrder, at+".at", m.At, fmt.Sprintf("in [0, layers (%d)]", in.Pools.Layers))
			}
		}
	}
	return nil
}

// RunHiCacheLoadScript runs a script on a loader built by newLoader. Both twins of
// hicache.load_script call it with their own loader, so the lifecycle
// semantics are written once and the loaders are what differs.
func RunHiCacheLoadScript(lim spec.Limits, in spec.HiCacheLoadScriptInput, newLoader spec.NewLoaderFunc) (spec.HiCacheLoadScriptOutput, error) {
	if err := validateLoadScript(lim, in); err != nil {
		return spec.HiCacheLoadScriptOutput{}, err
	}
	ld, err := newLoader(lim, in.Pools)
	if err != nil {
		return spec.HiCacheLoadScriptOutput{}, prefixField(err, "pools.")
	}
	out := spec.HiCacheLoadScriptOutput{Trace: make([]spec.LoadOpResult, 0, len(in.Ops))}
	var prev spec.LoadDescriptor
	for i, op := range in.Ops {
		r, d := runLoadOp(ld, op, prev, fmt.Sprintf("ops[%d].", i))
		if d != nil {
			prev = d
		}
		out.Trace = append(out.Trace, r)
	}
	out.Fallbacks = ld.Fallbacks()
	out.Device = deviceBytes(ld.Arena())
	return out, nil
}

// runLoadOp runs one op: begin, then for each layer its misuse steps and
// its submit, then EndLoad, then the after-end probes.
func runLoadOp(ld spec.Loader, op spec.LoadOp, prev spec.LoadDescriptor, at string) (spec.LoadOpResult, spec.LoadDescriptor) {
	r := spec.LoadOpResult{OpID: op.OpID, Runs: []spec.Run{}, Misuse: []spec.MisuseResult{}, AfterEnd: []spec.ErrorObject{}}
	d, err := ld.BeginLoad(op.OpID, op.HostIdx, op.DevIdx, op.PageSize, spec.LoadBackend{Unavailable: op.Unavailable, Policy: op.Policy})
	if err != nil {
		r.BeginError = errorAt(err, at)
		return r, nil
	}
	r.Descriptor, r.Fallback, r.Runs = d.Serial(), d.Fallback(), d.Runs()
	layers := ld.Arena().Pools.Layers
	closed := false
	for l := 0; l <= layers && !closed && r.SubmitError == nil; l++ {
		for _, m := range op.Misuse {
			if m.At == l && !closed {
				var mr spec.MisuseResult
				mr, closed = misuse(d, prev, op.OpID, m)
				r.Misuse = append(r.Misuse, mr)
			}
		}
		if l < layers && !closed {
			if err := d.SubmitLayer(op.OpID, l); err != nil {
				r.SubmitError = errorAt(err, at)
			} else {
				r.Layers++
			}
		}
	}
	r.Builds = d.Builds()
	if !closed {
		if err := d.EndLoad(); err != nil {
			r.EndError = errorAt(err, at)
		} else {
			closed = true
		}
	}
	if closed {
		r.AfterEnd = []spec.ErrorObject{probe(d.SubmitLayer(op.OpID, 0)), probe(d.EndLoad()), probe(d.Cancel())}
	}
	return r, d
}

// misuse runs one misuse step and reports whether it closed d.
func misuse(d, prev spec.LoadDescriptor, op uint64, m spec.LoadMisuse) (spec.MisuseResult, bool) {
	r := spec.MisuseResult{Kind: m.Kind, At: m.At}
	var err error
	switch m.Kind {
	case spec.MisuseOtherOp:
		err = d.SubmitLayer(op+1, d.NextLayer())
	case spec.MisuseSkipLayer:
		err = d.SubmitLayer(op, d.NextLayer()+1)
	case spec.MisuseEndEarly:
		err = d.EndLoad()
	case spec.MisuseCancel:
		err = d.Cancel()
	case spec.MisuseReusePrevious:
		if prev == nil {
			r.NoTarget = true
			return r, false
		}
		err = prev.SubmitLayer(op, d.NextLayer())
	}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
		return r, false
	}
	return r, m.Kind == spec.MisuseEndEarly || m.Kind == spec.MisuseCancel
}

// probe is the canonical error of a call that must be refused; an accepted
// call (a broken descriptor) shows as code "accepted".
func probe(err error) spec.ErrorObject {
	if err == nil {
		return spec.ErrorObject{Code: "accepted", Message: "a closed descriptor accepted the call"}
	}
	return spec.ErrorObjectOf(err)
}

func errorAt(err error, at string) *spec.ErrorObject {
	return new(spec.ErrorObjectOf(prefixField(err, at)))
}

// deviceBytes digests the device arena and, when small, inlines it.
func deviceBytes(a *spec.LoadArena) spec.DeviceBytes {
	h := sha256.New()
	var n int
	for _, bufs := range [][][]byte{a.DevKV, a.DevIndex} {
		for _, b := range bufs {
			h.Write(b)
			n += len(b)
		}
	}
	d := spec.DeviceBytes{SHA256: hex.EncodeToString(h.Sum(nil))}
	if n <= maxInlineDeviceBytes {
		d.KV, d.Index = a.DevKV, a.DevIndex
	}
	return d
}

// HiCacheLoadScript is the reference twin of hicache.load_script (docs/spec/radix-acks.md
// §5.2): the script run on the reference loader.
func HiCacheLoadScript(lim spec.Limits, in spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
	return RunHiCacheLoadScript(lim, in, NewLoader)
}
