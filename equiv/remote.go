package equiv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// ErrorMode says how a rejection by an implementation outside this build is
// compared with the reference's (docs/adapters.md "The values"). In every
// mode an accepted input must produce the reference's output, and an input
// one side accepts and the other rejects is a mismatch.
type ErrorMode string

// The error modes of `kvtwin audit --errors`.
const (
	// ErrorsExact requires the canonical error objects to be byte-equal.
	ErrorsExact ErrorMode = "exact"
	// ErrorsCode requires both sides to reject with the same code.
	ErrorsCode ErrorMode = "code"
	// ErrorsReject requires only that both sides reject.
	ErrorsReject ErrorMode = "reject"
)

// ParseErrorMode returns the mode called s.
func ParseErrorMode(s string) (ErrorMode, error) {
	switch m := ErrorMode(s); m {
	case ErrorsExact, ErrorsCode, ErrorsReject:
		return m, nil
	}
	return "", fmt.Errorf("error mode %q: want exact, code or reject", s)
}

// Remote is an implementation outside this build, reached through the
// adapter protocol: Run applies op to the canonical JSON input in and
// returns the implementation's raw answer; err is for transport failures
// (no answer, a malformed answer, a crash), never for a rejected input.
type Remote = fixtures.Runner

// RemoteTrial checks r on the seed-th generated case of kind.
func (s *Spec[In, Out]) RemoteTrial(name string, r Remote, mode ErrorMode, kind Kind, seed int) *Failure {
	in, want := s.draw(kind, seed)
	return s.remoteCheck(name, r, mode, fmt.Sprintf("%s/%d", kind, seed), int64(seed), in, want)
}

// RemoteTables checks r on every boundary and regression case.
func (s *Spec[In, Out]) RemoteTables(name string, r Remote, mode ErrorMode) []*Failure {
	var fs []*Failure
	for _, c := range s.tableCases() {
		if f := s.remoteCheck(name, r, mode, c.Name, 0, c.In, c.Want); f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

// RemoteShrink runs the rapid property of r over kind and returns the
// minimal counterexample rapid shrank to (against r itself), or nil when
// rapid finds none; a stateful op's counterexample is then made 1-minimal
// by step deletion against r (minimalScript). A transport failure (a
// crash, a hang) is shrunk like a mismatch, to the smallest input that
// causes it.
func (s *Spec[In, Out]) RemoteShrink(name string, r Remote, mode ErrorMode, kind Kind) *Failure {
	return s.shrink(fmt.Sprintf("%s/%s/%s", s.Op.OpName, name, kind), kind, func(in In, want *spec.Sentinel) *Failure {
		return s.remoteCheck(name, r, mode, "shrunk", 0, in, want)
	})
}

// remoteCheck is Check for a Remote: the reference (protected) against r's
// answer, decoded into Out or an error object and re-encoded canonically,
// compared under mode. Properties are not run: an accepted answer passes
// only when it equals the reference's output, which satisfies them.
func (s *Spec[In, Out]) remoteCheck(name string, r Remote, mode ErrorMode, caseName string, seed int64, in In, want *spec.Sentinel) *Failure {
	fromRef, reason := s.runRef(in, want)
	fail := func(reason, diff string) *Failure {
		return s.failure(name, caseName, seed, in, reason, diff, fromRef.res)
	}
	inBytes, err := catalog.Marshal(in)
	if err != nil {
		return fail("input does not encode: "+err.Error(), "")
	}
	if reason != "" {
		return fail(reason, "")
	}
	res, err := r.Run(s.Op.OpName, inBytes)
	if err != nil {
		f := fail("transport: "+err.Error(), "")
		f.Transport = true
		return f
	}
	got, reason := s.canonicalAnswer(res)
	refRes := *fromRef.res
	if reason != "" {
		return withPaths(fail(reason, fixtures.DiffJSON(refRes, res)), ErrorsExact, refRes, res)
	}
	if paths := s.unchecked(); len(paths) > 0 && !refRes.Rejected && !got.Rejected {
		refRes.Bytes, got.Bytes = dropPaths(refRes.Bytes, paths), dropPaths(got.Bytes, paths)
	}
	if !sameUnder(mode, refRes, got) {
		return withPaths(fail(fmt.Sprintf("results differ (--errors %s)", mode), fixtures.DiffJSON(refRes, got)), mode, refRes, got)
	}
	return nil
}

// withPaths adds to f where got differs from want under mode, as JSON
// paths: an answer that does not decode is compared as sent (exactly), so
// its unknown or mistyped members show.
func withPaths(f *Failure, mode ErrorMode, want, got fixtures.Result) *Failure {
	f.Paths, f.MorePaths = resultPaths(mode, want, got)
	return f
}

// canonicalAnswer decodes a remote answer strictly (unknown members are an
// error) into Out or an error object and re-encodes it canonically, so
// member order and whitespace are the adapter's own business.
func (s *Spec[In, Out]) canonicalAnswer(res fixtures.Result) (fixtures.Result, string) {
	if res.Rejected {
		var obj remoteErrorObject
		if err := strictDecode(res.Bytes, &obj); err != nil {
			return res, "error object does not decode: " + err.Error()
		}
		if obj.Code == "" {
			return res, "error object has no code"
		}
		if err := obj.compactValue(); err != nil {
			return res, "error object value: " + err.Error()
		}
		b, err := catalog.Marshal(obj)
		if err != nil {
			return res, "error object does not encode: " + err.Error()
		}
		return fixtures.Result{Bytes: b, Rejected: true}, ""
	}
	var out Out
	if err := strictDecode(res.Bytes, &out); err != nil {
		return res, fmt.Sprintf("output does not decode as %T: %v", out, err)
	}
	b, err := catalog.Marshal(out)
	if err != nil {
		return res, "output does not encode: " + err.Error()
	}
	return fixtures.Result{Bytes: b}, ""
}

// remoteErrorObject is spec.ErrorObject as an adapter sends it: the same
// members in the same order, with the value kept as the adapter wrote it
// (compacted), since decoding an object value into a map would reorder its
// members and hide or invent differences.
type remoteErrorObject struct {
	Code    string          `json:"code"`
	Field   string          `json:"field,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Bound   string          `json:"bound,omitempty"`
	Message string          `json:"message"`
}

// compactValue compacts the value and drops a null one, as ref omits a nil
// value.
func (o *remoteErrorObject) compactValue() error {
	if len(o.Value) == 0 || bytes.Equal(bytes.TrimSpace(o.Value), []byte("null")) {
		o.Value = nil
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, o.Value); err != nil {
		return err
	}
	o.Value = buf.Bytes()
	return nil
}

// sameUnder compares the reference's result with an implementation's under
// mode.
func sameUnder(mode ErrorMode, want, got fixtures.Result) bool {
	if want.Rejected != got.Rejected {
		return false
	}
	if !want.Rejected {
		return bytes.Equal(want.Bytes, got.Bytes) || mode != ErrorsExact && sameMasked(mode, want.Bytes, got.Bytes)
	}
	if mode == ErrorsExact {
		return bytes.Equal(want.Bytes, got.Bytes)
	}
	if mode == ErrorsReject {
		return true
	}
	var w, g struct {
		Code string `json:"code"`
	}
	return json.Unmarshal(want.Bytes, &w) == nil && json.Unmarshal(got.Bytes, &g) == nil && w.Code == g.Code
}

// sameMasked compares two accepted outputs with every error object inside
// them (a script's rejected step, spec.ErrorObject) reduced as mode says:
// to its code, and its field where the reference's names one (code), or
// to the fact of a rejection (reject). The rest must be equal.
func sameMasked(mode ErrorMode, want, got []byte) bool {
	var w, g any
	if decodeNumbers(want, &w) != nil || decodeNumbers(got, &g) != nil {
		return false
	}
	return reflect.DeepEqual(maskErrors(mode, w, nil), maskErrors(mode, g, w))
}

// decodeNumbers decodes b keeping numbers as written.
func decodeNumbers(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// errorObjectKeys are the members an error object may have.
var errorObjectKeys = map[string]bool{"code": true, "field": true, "value": true, "bound": true, "message": true}

// isErrorObject reports whether v is an error object: a JSON object with a
// string code and message and no member an error object lacks.
func isErrorObject(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	_, code := m["code"].(string)
	_, msg := m["message"].(string)
	if !code || !msg {
		return nil, false
	}
	for k := range m {
		if !errorObjectKeys[k] {
			return nil, false
		}
	}
	return m, true
}

// maskErrors is v with each error object reduced under mode; ref is the
// reference's value at the same place (nil for the reference itself), so
// that a field is kept only where the reference's error names one.
func maskErrors(mode ErrorMode, v, ref any) any {
	if e, ok := isErrorObject(v); ok {
		if mode == ErrorsReject {
			return "rejected"
		}
		masked := map[string]any{"code": e["code"]}
		refErr, _ := isErrorObject(ref)
		if ref == nil {
			refErr = e
		}
		if _, named := refErr["field"]; named {
			masked["field"] = e["field"]
		}
		return masked
	}
	switch x := v.(type) {
	case map[string]any:
		rm, _ := ref.(map[string]any)
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = maskErrors(mode, e, rm[k])
		}
		return out
	case []any:
		ra, _ := ref.([]any)
		out := make([]any, len(x))
		for i, e := range x {
			var r any
			if i < len(ra) {
				r = ra[i]
			}
			out[i] = maskErrors(mode, e, r)
		}
		return out
	}
	return v
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
