// Package adapter is the Go adapter kit: it serves Go functions to `kvtwin
// audit --impl` over the adapter protocol of docs/adapters.md. A Go program
// (a router's prefix index, a transfer planner) audits its own
// implementation of a kvtwin op against the reference with it:
//
//	a := adapter.New()
//	adapter.Handle(a, "transfer.group_contiguous", myGroupContiguous) // func(spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error)
//	a.ServeExec(context.Background(), os.Stdin, os.Stdout)            // kvtwin audit --impl exec:'./myadapter'
//
// A function rejects an input by returning a *Reject (or a kvtwin
// *spec.InputError); any other error, and a panic, is answered as the error
// code "internal", which the audit reports as a mismatch.
package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// OpsCall is the op name that lists the ops an adapter implements.
const OpsCall = "kvtwin.ops"

// Codes the protocol itself uses.
const (
	// CodeNotImplemented answers an op the adapter does not implement.
	CodeNotImplemented = "not_implemented"
	// CodeInternal answers a function that failed other than by rejecting
	// its input (an unmapped error or a panic).
	CodeInternal = "internal"
	// CodeBadJSON answers an input that does not decode as the op's input
	// type, strictly (an unknown member, a wrong type, trailing data): the
	// reference's own code for it (catalog.ErrBadJSON), so an audit under
	// --errors code compares it like any other rejection.
	CodeBadJSON = "bad_json"
)

// Adapter is a set of op implementations. Register with Handle before
// serving; serving is safe for concurrent use.
type Adapter struct {
	ops   map[string]func(json.RawMessage) (json.RawMessage, *spec.ErrorObject)
	decls map[string]Declaration
	// maxLineBytes is 0 (MaxLineBytes) outside this package's tests.
	maxLineBytes int
}

// New returns an adapter implementing no op.
func New() *Adapter {
	return &Adapter{ops: map[string]func(json.RawMessage) (json.RawMessage, *spec.ErrorObject){}, decls: map[string]Declaration{}}
}

// Declaration is the part of a script op an adapter implements
// (docs/adapters.md "Partial declarations"): kvtwin audit then generates
// only scripts inside it and reports the rest as not audited.
type Declaration struct {
	// Steps are the step kinds implemented; nil for every kind. A script
	// op's kinds are listed in docs/adapters.md.
	Steps []string
	// Options are the op's options set off (false) or on; an option not
	// named is on (radix.script's hashed_score: false means no score step
	// without exact is sent).
	Options map[string]bool
}

// Declare lists op (registered with Handle) as implemented in part, as d
// says. kvtwin audit rejects a declaration naming a kind or option the op
// lacks; declaring an op again replaces the first declaration.
func (a *Adapter) Declare(op string, d Declaration) { a.decls[op] = d }

// Handle registers f as a's implementation of op: its input is decoded from
// the call's JSON into In, and its output encoded as the reply. Registering
// an op twice replaces the first.
func Handle[In, Out any](a *Adapter, op string, f func(In) (Out, error)) {
	a.ops[op] = func(raw json.RawMessage) (json.RawMessage, *spec.ErrorObject) {
		in, err := decodeStrict[In](raw)
		if err != nil {
			return nil, &spec.ErrorObject{Code: CodeBadJSON, Message: fmt.Sprintf("input does not decode as %T: %v", in, err)}
		}
		out, err := call(f, in)
		if err != nil {
			return nil, errorObject(err)
		}
		b, merr := json.Marshal(out)
		if merr != nil {
			return nil, &spec.ErrorObject{Code: CodeInternal, Message: "output does not encode: " + merr.Error()}
		}
		return b, nil
	}
}

// decodeStrict decodes raw into an In as the reference does: unknown
// members and anything after the value are refused, not ignored (an
// engine that accepted what the reference rejects would fail its audit
// for its kit's leniency).
func decodeStrict[In any](raw json.RawMessage) (In, error) {
	var in In
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, err
	}
	if dec.More() {
		return in, errors.New("trailing data after the input object")
	}
	return in, nil
}

// call runs f, turning a panic into an error so one bad input never takes
// the adapter down.
func call[In, Out any](f func(In) (Out, error), in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f(in)
}

// Reject is an error that rejects an input with a kvtwin error code (the
// sentinels of package ref, e.g. "length_mismatch").
type Reject struct {
	// Code is the error code; required.
	Code string
	// Message is the human-readable text.
	Message string
	// Field, Value and Bound name the offending field, its value and the
	// bound it broke; optional.
	Field string
	Value any
	Bound string
}

func (r *Reject) Error() string { return r.Code + ": " + r.Message }

// errorObject maps a function's error to the reply's error object.
func errorObject(err error) *spec.ErrorObject {
	var rj *Reject
	if errors.As(err, &rj) {
		return &spec.ErrorObject{Code: rj.Code, Message: rj.Message, Field: rj.Field, Value: rj.Value, Bound: rj.Bound}
	}
	if _, ok := spec.AsInputError(err); ok {
		obj := spec.ErrorObjectOf(err)
		return &obj
	}
	return &spec.ErrorObject{Code: CodeInternal, Message: err.Error()}
}

// Ops lists the ops a implements, sorted.
func (a *Adapter) Ops() []string { return slices.Sorted(maps.Keys(a.ops)) }

// Call applies op to in: the output JSON, or the error object the protocol
// answers with (not_implemented for an unknown op).
func (a *Adapter) Call(op string, in json.RawMessage) (json.RawMessage, *spec.ErrorObject) {
	if op == OpsCall {
		list := make([]map[string]any, 0, len(a.ops))
		for _, name := range a.Ops() {
			item := map[string]any{"name": name}
			if d, ok := a.decls[name]; ok && d.Steps != nil {
				item["steps"] = d.Steps
			}
			if d, ok := a.decls[name]; ok && d.Options != nil {
				item["options"] = d.Options
			}
			list = append(list, item)
		}
		b, _ := json.Marshal(list)
		return b, nil
	}
	f, ok := a.ops[op]
	if !ok {
		return nil, &spec.ErrorObject{Code: CodeNotImplemented, Message: fmt.Sprintf("op %q is not implemented by this adapter", op)}
	}
	return f(in)
}
