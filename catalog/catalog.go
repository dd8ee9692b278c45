// Package catalog pairs each algorithm's twins under one name. It is the only
// place an algorithm is named: the differential suite, fixtures, server, CLI
// and benchmarks all iterate All(). An Op is the typed registration; Entry is
// the byte-level view (canonical JSON in, canonical JSON out) derived from it.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Impl names an implementation of an op.
type Impl string

const (
	// Ref is the reference implementation (package ref), the contract.
	Ref Impl = "ref"
	// Fast is the CPU production implementation (package fast).
	Fast Impl = "fast"
	// CUDA is the GPU implementation (package fast/cuda, build tag cuda).
	CUDA Impl = "cuda"
)

// ErrUnknownImpl is returned when an implementation name is not ref, fast or cuda.
var ErrUnknownImpl = errors.New("unknown implementation")

// ErrImplUnavailable is returned when an op has no twin for the requested
// implementation in this build (e.g. cuda without -tags cuda). kvtwin never
// falls back to another implementation silently.
var ErrImplUnavailable = errors.New("implementation unavailable")

// ParseImpl validates an implementation name.
func ParseImpl(s string) (Impl, error) {
	switch Impl(s) {
	case Ref, Fast, CUDA:
		return Impl(s), nil
	}
	return "", fmt.Errorf("%w %q: want ref, fast or cuda", ErrUnknownImpl, s)
}

// Entry is what every consumer sees: a named algorithm runnable on any of
// its implementations, on canonical JSON.
type Entry interface {
	// Name is the op's dotted name, e.g. "transfer.filter_cp_rank".
	Name() string
	// Spec is the spec section, e.g. "docs/spec/transfer.md §1".
	Spec() string
	// Doc is a one-line description.
	Doc() string
	// Impls lists the implementations present in this build, ref first.
	Impls() []Impl
	// Example is a small valid input, as canonical JSON.
	Example() json.RawMessage
	// Run decodes in strictly, runs impl and returns the canonical result:
	// the output's JSON, or on rejection the canonical error object together
	// with a non-nil error (an *spec.InputError for bad input).
	Run(impl Impl, lim spec.Limits, in []byte) ([]byte, error)
	// Benchmarks lists the op's benchmark shapes, type-erased.
	Benchmarks() []Bench
	// Cost is the op's stated bound on what one run may allocate.
	Cost() Cost
	// InputType is the Go type Run decodes a request into: the server's
	// JSON gate reads from it which objects are decoded member by member.
	InputType() reflect.Type
}

// Func is the signature every twin of an op has.
type Func[In, Out any] func(spec.Limits, In) (Out, error)

// Shape is a named benchmark input (see docs/perf.md).
type Shape[In any] struct {
	// Name identifies the shape, e.g. "1024-pages".
	Name string
	// Make builds the input deterministically.
	Make func() In
	// CopyBytes, when > 0, asks the bench to also time a plain copy of this
	// many bytes in the same run, as the op's memory-bandwidth yardstick.
	CopyBytes int64
}

// Op is the typed registration of one algorithm and its twins.
type Op[In, Out any] struct {
	// OpName is the dotted op name.
	OpName string
	// SpecRef is the spec section.
	SpecRef string
	// Summary is a one-line description.
	Summary string
	// Ref, Fast and CUDA are the twins. CUDA is the fast/cuda twin, nil for
	// an op without one; it is offered (Impls, Func) only when the CUDA
	// runtime is usable and passed its start-up self-test (CUDAStatus).
	Ref, Fast, CUDA Func[In, Out]
	// Sample is a small valid input shown by GET /v1/ops.
	Sample In
	// Shapes are the benchmark inputs.
	Shapes []Shape[In]
	// Work is the op's cost bound; the zero value means DefaultCost.
	Work Cost
}

// Name implements Entry.
func (o *Op[In, Out]) Name() string { return o.OpName }

// Spec implements Entry.
func (o *Op[In, Out]) Spec() string { return o.SpecRef }

// Doc implements Entry.
func (o *Op[In, Out]) Doc() string { return o.Summary }

// Impls implements Entry.
func (o *Op[In, Out]) Impls() []Impl {
	impls := []Impl{Ref, Fast}
	if o.CUDA != nil && CUDAStatus() == nil {
		impls = append(impls, CUDA)
	}
	return impls
}

// Func returns the twin for impl, or an error naming why it is unavailable.
func (o *Op[In, Out]) Func(impl Impl) (Func[In, Out], error) {
	var f Func[In, Out]
	switch impl {
	case Ref:
		f = o.Ref
	case Fast:
		f = o.Fast
	case CUDA:
		if err := CUDAStatus(); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", o.OpName, ErrImplUnavailable, err)
		}
		f = o.CUDA
		if f == nil {
			return nil, fmt.Errorf("%s: %w: cuda: the op has no CUDA twin yet", o.OpName, ErrImplUnavailable)
		}
	default:
		return nil, fmt.Errorf("%s: %w %q", o.OpName, ErrUnknownImpl, impl)
	}
	if f == nil {
		return nil, fmt.Errorf("%s: %w: %s", o.OpName, ErrImplUnavailable, impl)
	}
	return f, nil
}

// Example implements Entry.
func (o *Op[In, Out]) Example() json.RawMessage {
	b, err := Marshal(o.Sample)
	if err != nil {
		panic(fmt.Sprintf("%s: sample input does not encode: %v", o.OpName, err))
	}
	return b
}

// Run implements Entry.
func (o *Op[In, Out]) Run(impl Impl, lim spec.Limits, in []byte) ([]byte, error) {
	f, err := o.Func(impl)
	if err != nil {
		return nil, err
	}
	x, err := DecodeStrict[In](in)
	if err != nil {
		return Canonical[Out](*new(Out), err), err
	}
	lim.InputBytes = int64(len(in))
	out, err := f(lim, x)
	return Canonical(out, err), err
}

// InputType implements Entry.
func (o *Op[In, Out]) InputType() reflect.Type { return reflect.TypeFor[In]() }

// Benchmarks implements Entry.
func (o *Op[In, Out]) Benchmarks() []Bench {
	var bs []Bench
	for _, sh := range o.Shapes {
		bs = append(bs, Bench{Shape: sh.Name, CopyBytes: sh.CopyBytes, Prepare: o.prepare(sh), Output: o.output(sh)})
	}
	return bs
}

func (o *Op[In, Out]) prepare(sh Shape[In]) func(Impl) (func() error, error) {
	return func(impl Impl) (func() error, error) {
		f, err := o.Func(impl)
		if err != nil {
			return nil, err
		}
		in, lim := sh.Make(), spec.DefaultLimits()
		return func() error { _, err := f(lim, in); return err }, nil
	}
}

// output runs impl once on the shape's input and returns the canonical result.
func (o *Op[In, Out]) output(sh Shape[In]) func(Impl) ([]byte, error) {
	return func(impl Impl) ([]byte, error) {
		f, err := o.Func(impl)
		if err != nil {
			return nil, err
		}
		out, err := f(spec.DefaultLimits(), sh.Make())
		return Canonical(out, err), err
	}
}

// Bench is a type-erased benchmark shape of an Entry.
type Bench struct {
	// Shape is the shape name.
	Shape string
	// CopyBytes is the size of the plain-copy yardstick, or 0 for none.
	CopyBytes int64
	// Prepare builds the input once and returns a closure running impl on it.
	Prepare func(Impl) (func() error, error)
	// Output builds the input and returns impl's canonical result on it, so
	// payload-scale shapes can be compared across implementations.
	Output func(Impl) ([]byte, error)
}

// DecodeStrict decodes canonical or hand-written JSON into In, rejecting
// unknown fields and trailing data with an *spec.InputError naming the field.
func DecodeStrict[In any](in []byte) (In, error) {
	var x In
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return x, decodeError(err)
	}
	if dec.More() {
		return x, spec.Reject(ErrBadJSON, "$", "trailing data", "a single JSON object")
	}
	return x, nil
}

// ErrBadJSON is the sentinel for request bodies that do not decode into the op's input.
var ErrBadJSON = spec.NewSentinel("bad_json", "input does not decode")

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "$"
		}
		return spec.Reject(ErrBadJSON, field, te.Value, "a JSON "+te.Type.String())
	case errors.As(err, &se):
		return spec.Reject(ErrBadJSON, "$", fmt.Sprintf("offset %d", se.Offset), "valid JSON: "+se.Error())
	}
	msg := err.Error()
	if f, ok := unknownField(msg); ok {
		return spec.Reject(ErrBadJSON, f, "unknown field", "a field of the op's input")
	}
	return spec.Reject(ErrBadJSON, "$", msg, "a JSON object")
}

func unknownField(msg string) (string, bool) {
	const p = `json: unknown field "`
	if len(msg) > len(p)+1 && msg[:len(p)] == p {
		return msg[len(p) : len(msg)-1], true
	}
	return "", false
}

// ErrorObject is the canonical encoding of a rejected input (see
// spec.ErrorObject).
type ErrorObject = spec.ErrorObject

// ErrorObjectOf converts err to its canonical error object.
func ErrorObjectOf(err error) ErrorObject { return spec.ErrorObjectOf(err) }

// Canonical is the byte form twins are compared on: the output's JSON when
// err is nil, otherwise the JSON of the error object.
func Canonical[Out any](out Out, err error) []byte {
	var v any = out
	if err != nil {
		v = ErrorObjectOf(err)
	}
	b, merr := Marshal(v)
	if merr != nil {
		b, _ = Marshal(ErrorObject{Code: "internal", Message: "output does not encode: " + merr.Error()})
	}
	return b
}

// Marshal is kvtwin's canonical JSON encoding: encoding/json without HTML
// escaping (so "<=" stays readable in messages and fixtures) and without a
// trailing newline. Everything that embeds canonical bytes (fixture lines,
// HTTP bodies) must encode with it, or embedded raw bytes would be re-escaped.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

//go:generate go run ../internal/gen -root ..

// All returns every registered op, in name order. Each call builds fresh
// entries; there is no package-level registry to mutate. The list is
// generated (all_gen.go, `make generate`): every exported, parameterless
// func of this package returning *Op[...] is an op.
func All() []Entry {
	entries := generatedOps()
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries
}

// Lookup returns the op named name.
func Lookup(name string) (Entry, bool) {
	for _, e := range All() {
		if e.Name() == name {
			return e, true
		}
	}
	return nil, false
}
