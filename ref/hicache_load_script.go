package ref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The hicache.load_script op (docs/spec/radix-acks.md §5.2): a list of load
// operations (batches) against one loader, each begun, submitted layer by
// layer and ended, with optional misuse steps; the output is each op's
// descriptor facts, the fallback log and the device bytes, so the
// descriptor lifecycle gets fixtures and an HTTP endpoint like every pure op.

// Misuse kinds of a load op (docs/spec/radix-acks.md §5.2, §5.4).
const (
	// MisuseOtherOp submits the next layer under another op id (op_id+1):
	// ErrDescriptorOpMismatch.
	MisuseOtherOp = "other_op"
	// MisuseSkipLayer submits the layer after the next: ErrLayerOutOfOrder.
	MisuseSkipLayer = "skip_layer"
	// MisuseEndEarly calls EndLoad: ErrEndBeforeComplete unless every layer
	// was submitted (then it ends the op, and the regular EndLoad is refused).
	MisuseEndEarly = "end_early"
	// MisuseCancel cancels the op: no further layer is submitted.
	MisuseCancel = "cancel"
	// MisuseReusePrevious submits the next layer of this op on the previous
	// op's descriptor (§5.4 B5.b): ErrDescriptorClosed.
	MisuseReusePrevious = "reuse_previous"
)

// LoadMisuse is one misuse step of a load op, run before the op submits
// layer At (At == layers: after the last layer, before EndLoad).
type LoadMisuse struct {
	// Kind is other_op, skip_layer, end_early, cancel or reuse_previous.
	Kind string `json:"kind"`
	// At is the layer before whose submit the step runs, in [0, layers].
	At int `json:"at"`
}

// LoadOp is one load operation (a merged batch, §5.1) of a load script.
type LoadOp struct {
	// OpID identifies the load op.
	OpID uint64 `json:"op_id"`
	// HostIdx are the host token slots, whole pages, in caller order.
	HostIdx []SlotIdx `json:"host_idx"`
	// DevIdx are the device token slots; DevIdx[i] receives HostIdx[i].
	DevIdx []SlotIdx `json:"dev_idx"`
	// PageSize is the op's page size in tokens, >= 1.
	PageSize int `json:"page_size"`
	// Unavailable is set when the backend lacks the prepared submit.
	Unavailable bool `json:"unavailable,omitzero"`
	// Policy is strict ("" too) or allow_fallback.
	Policy LoadPolicy `json:"policy,omitzero"`
	// Misuse are the op's misuse steps, run in order at their layers.
	Misuse []LoadMisuse `json:"misuse,omitzero"`
}

// HiCacheLoadScriptInput is the input of hicache.load_script.
type HiCacheLoadScriptInput struct {
	// Pools configures the host and device arenas every op loads between.
	Pools LoadPools `json:"pools"`
	// Ops run in order.
	Ops []LoadOp `json:"ops"`
}

// MisuseResult is the outcome of one misuse step.
type MisuseResult struct {
	// Kind echoes the step's kind.
	Kind string `json:"kind"`
	// At echoes the step's layer.
	At int `json:"at"`
	// Error is the refusal; null when the call was accepted.
	Error *ErrorObject `json:"error"`
	// NoTarget is set for reuse_previous when no earlier op has a descriptor.
	NoTarget bool `json:"no_target,omitzero"`
}

// LoadOpResult is what one load op did.
type LoadOpResult struct {
	// OpID echoes the op id.
	OpID uint64 `json:"op_id"`
	// BeginError is BeginLoad's refusal; the op did nothing else.
	BeginError *ErrorObject `json:"begin_error,omitempty"`
	// Descriptor is the descriptor's serial: a fresh one per op (D3).
	Descriptor int `json:"descriptor"`
	// Fallback is set when the op ran the per-layer fallback path.
	Fallback bool `json:"fallback"`
	// Runs are the descriptor's runs, in caller order.
	Runs []Run `json:"runs"`
	// Builds counts the page-list builds when the op closed.
	Builds int `json:"builds"`
	// Layers counts the layers submitted.
	Layers int `json:"layers"`
	// Misuse are the misuse steps' outcomes, in order.
	Misuse []MisuseResult `json:"misuse"`
	// SubmitError is the first refused regular submit (the op stops there).
	SubmitError *ErrorObject `json:"submit_error,omitempty"`
	// EndError is EndLoad's refusal; null when the op ended (or was cancelled).
	EndError *ErrorObject `json:"end_error,omitempty"`
	// AfterEnd are the refusals of a submit, an EndLoad and a Cancel probed
	// after the op closed (D4); empty when it never closed.
	AfterEnd []ErrorObject `json:"after_end"`
}

// DeviceBytes is the device arena after the script: its SHA-256 always,
// the bytes themselves (base64 in JSON) for arenas of at most
// maxInlineDeviceBytes.
type DeviceBytes struct {
	// SHA256 is the hex SHA-256 of every KV layer, then every index slot.
	SHA256 string `json:"sha256"`
	// KV are the device KV layers (small arenas only).
	KV [][]byte `json:"kv,omitempty"`
	// Index are the device index slots (small arenas only).
	Index [][]byte `json:"index,omitempty"`
}

// maxInlineDeviceBytes bounds the device arenas whose bytes the script
// output carries (fixtures stay small; larger arenas give the digest only).
const maxInlineDeviceBytes = 4096

// HiCacheLoadScriptOutput is the output of hicache.load_script.
type HiCacheLoadScriptOutput struct {
	// Trace has one result per op.
	Trace []LoadOpResult `json:"trace"`
	// Fallbacks is the loader's fallback log.
	Fallbacks []FallbackEvent `json:"fallbacks"`
	// Device is the device arena after the last op.
	Device DeviceBytes `json:"device"`
}

// validateLoadScript rejects a script that cannot run: bad pools, an
// unknown misuse kind (ErrBadEnum) or a misuse layer outside [0, layers]
// (ErrLayerOutOfOrder). Bad indices, page sizes and policies are the ops'
// own refusals, recorded in the trace.
func validateLoadScript(lim Limits, in HiCacheLoadScriptInput) error {
	if err := validateLoadPools(lim, in.Pools); err != nil {
		return prefixField(err, "pools.")
	}
	for i, op := range in.Ops {
		for j, m := range op.Misuse {
			at := fmt.Sprintf("ops[%d].misuse[%d]", i, j)
			switch m.Kind {
			case MisuseOtherOp, MisuseSkipLayer, MisuseEndEarly, MisuseCancel, MisuseReusePrevious:
			default:
				return Reject(ErrBadEnum, at+".kind", m.Kind, "one of other_op, skip_layer, end_early, cancel, reuse_previous")
			}
			if m.At < 0 || m.At > in.Pools.Layers {
				return Reject(ErrLayerOutOfOrder, at+".at", m.At, fmt.Sprintf("in [0, layers (%d)]", in.Pools.Layers))
			}
		}
	}
	return nil
}

// RunHiCacheLoadScript runs a script on a loader built by newLoader. Both twins of
// hicache.load_script call it with their own loader, so the lifecycle
// semantics are written once and the loaders are what differs.
func RunHiCacheLoadScript(lim Limits, in HiCacheLoadScriptInput, newLoader NewLoaderFunc) (HiCacheLoadScriptOutput, error) {
	if err := validateLoadScript(lim, in); err != nil {
		return HiCacheLoadScriptOutput{}, err
	}
	ld, err := newLoader(lim, in.Pools)
	if err != nil {
		return HiCacheLoadScriptOutput{}, prefixField(err, "pools.")
	}
	out := HiCacheLoadScriptOutput{Trace: make([]LoadOpResult, 0, len(in.Ops))}
	var prev LoadDescriptor
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
func runLoadOp(ld Loader, op LoadOp, prev LoadDescriptor, at string) (LoadOpResult, LoadDescriptor) {
	r := LoadOpResult{OpID: op.OpID, Runs: []Run{}, Misuse: []MisuseResult{}, AfterEnd: []ErrorObject{}}
	d, err := ld.BeginLoad(op.OpID, op.HostIdx, op.DevIdx, op.PageSize, LoadBackend{Unavailable: op.Unavailable, Policy: op.Policy})
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
				var mr MisuseResult
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
		r.AfterEnd = []ErrorObject{probe(d.SubmitLayer(op.OpID, 0)), probe(d.EndLoad()), probe(d.Cancel())}
	}
	return r, d
}

// misuse runs one misuse step and reports whether it closed d.
func misuse(d, prev LoadDescriptor, op uint64, m LoadMisuse) (MisuseResult, bool) {
	r := MisuseResult{Kind: m.Kind, At: m.At}
	var err error
	switch m.Kind {
	case MisuseOtherOp:
		err = d.SubmitLayer(op+1, d.NextLayer())
	case MisuseSkipLayer:
		err = d.SubmitLayer(op, d.NextLayer()+1)
	case MisuseEndEarly:
		err = d.EndLoad()
	case MisuseCancel:
		err = d.Cancel()
	case MisuseReusePrevious:
		if prev == nil {
			r.NoTarget = true
			return r, false
		}
		err = prev.SubmitLayer(op, d.NextLayer())
	}
	if err != nil {
		r.Error = new(ErrorObjectOf(err))
		return r, false
	}
	return r, m.Kind == MisuseEndEarly || m.Kind == MisuseCancel
}

// probe is the canonical error of a call that must be refused; an accepted
// call (a broken descriptor) shows as code "accepted".
func probe(err error) ErrorObject {
	if err == nil {
		return ErrorObject{Code: "accepted", Message: "a closed descriptor accepted the call"}
	}
	return ErrorObjectOf(err)
}

func errorAt(err error, at string) *ErrorObject {
	return new(ErrorObjectOf(prefixField(err, at)))
}

// deviceBytes digests the device arena and, when small, inlines it.
func deviceBytes(a *LoadArena) DeviceBytes {
	h := sha256.New()
	var n int
	for _, bufs := range [][][]byte{a.DevKV, a.DevIndex} {
		for _, b := range bufs {
			h.Write(b)
			n += len(b)
		}
	}
	d := DeviceBytes{SHA256: hex.EncodeToString(h.Sum(nil))}
	if n <= maxInlineDeviceBytes {
		d.KV, d.Index = a.DevKV, a.DevIndex
	}
	return d
}

// HiCacheLoadScript is the reference twin of hicache.load_script (docs/spec/radix-acks.md
// §5.2): the script run on the reference loader.
func HiCacheLoadScript(lim Limits, in HiCacheLoadScriptInput) (HiCacheLoadScriptOutput, error) {
	return RunHiCacheLoadScript(lim, in, NewLoader)
}
