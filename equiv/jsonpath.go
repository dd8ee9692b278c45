package equiv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kvtwin/kvtwin/fixtures"
)

// This file shows how an adapter's answer differs from the reference's as
// one line per differing leaf, named by its JSONPath
// (`$.trace[3].error.code: "x" → "y"`), so a person sees where to look in
// an output of thousands of values (docs/adapters.md, "Reading a
// mismatch").

// PathDiff is one place where two JSON values differ: its JSONPath and
// what each side holds there, as compact JSON, or Absent where a side has
// no such member or element.
type PathDiff struct {
	// Path is the JSONPath of the place, e.g. `$.trace[3].error.code`.
	Path string `json:"path"`
	// Ref is the reference's value there, Impl the implementation's.
	Ref  string `json:"ref"`
	Impl string `json:"impl"`
}

// String renders d as `PATH: REF → IMPL`.
func (d PathDiff) String() string { return d.Path + ": " + d.Ref + " → " + d.Impl }

// Absent stands for the value of a side that has no member or element at
// a path the other side has.
const Absent = "(absent)"

// MaxPathDiffs bounds the differences a failure keeps: enough to show a
// pattern, few enough to read; the rest are counted (Failure.MorePaths).
const MaxPathDiffs = 20

// maxPathValue bounds one rendered value, in bytes; a longer one is cut at
// a rune boundary and ends in "…".
const maxPathValue = 160

// DiffPaths returns where the JSON texts ref and impl differ, one entry per
// differing leaf, in document order (an object's members by name, an
// array's elements by index), at most limit of them, and how many more
// differ. A leaf is a scalar, or the whole value where the two sides
// differ in kind (an object against an array, a number against a string);
// a member or element only one side has is Absent on the other. Numbers
// are compared as the decimal values they write, with no rounding (1.0
// equals 1e0; 9007199254740993 differs from 9007199254740992). Under
// ErrorsCode and ErrorsReject an error object on both sides is compared as
// audit compares it (sameMasked): by its code, and its field where ref's
// names one, or not at all. An error names the side that is not JSON.
func DiffPaths(mode ErrorMode, ref, impl []byte, limit int) ([]PathDiff, int, error) {
	var r, i any
	if err := decodeNumbers(ref, &r); err != nil {
		return nil, 0, fmt.Errorf("the reference's value is not JSON: %w", err)
	}
	if err := decodeNumbers(impl, &i); err != nil {
		return nil, 0, fmt.Errorf("the implementation's value is not JSON: %w", err)
	}
	d := pathDiffer{mode: mode, limit: limit}
	d.walk("$", r, i)
	return d.out, d.more, nil
}

// resultPaths is DiffPaths for two canonical results compared under mode,
// as sameUnder compares them: a rejection against an output is one
// difference at `$` (the two whole values); two rejections differ under
// ErrorsCode by their codes alone, under ErrorsReject never. nil when the
// values do not decode (the failure's reason says why).
func resultPaths(mode ErrorMode, want, got fixtures.Result) ([]PathDiff, int) {
	switch {
	case want.Rejected != got.Rejected:
		return []PathDiff{{Path: "$", Ref: renderRaw(want.Bytes), Impl: renderRaw(got.Bytes)}}, 0
	case want.Rejected && mode == ErrorsReject:
		return nil, 0
	case want.Rejected && mode == ErrorsCode:
		var w, g struct {
			Code json.RawMessage `json:"code"`
		}
		if json.Unmarshal(want.Bytes, &w) != nil || json.Unmarshal(got.Bytes, &g) != nil {
			return nil, 0
		}
		ps, more, _ := DiffPaths(ErrorsExact, orNull(w.Code), orNull(g.Code), MaxPathDiffs)
		for k := range ps {
			ps[k].Path = "$.code" + strings.TrimPrefix(ps[k].Path, "$")
		}
		return ps, more
	}
	ps, more, err := DiffPaths(mode, want.Bytes, got.Bytes, MaxPathDiffs)
	if err != nil {
		return nil, 0
	}
	return ps, more
}

func orNull(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// pathDiffer collects the differences of one DiffPaths call.
type pathDiffer struct {
	mode  ErrorMode
	limit int
	out   []PathDiff
	more  int
}

// walk compares ref and impl, both present at path.
func (d *pathDiffer) walk(path string, ref, impl any) {
	if d.maskedErrors(path, ref, impl) {
		return
	}
	switch r := ref.(type) {
	case map[string]any:
		if i, ok := impl.(map[string]any); ok {
			d.members(path, r, i)
			return
		}
	case []any:
		if i, ok := impl.([]any); ok {
			d.elements(path, r, i)
			return
		}
	default:
		if sameScalar(ref, impl) {
			return
		}
	}
	d.add(path, render(ref), render(impl))
}

// maskedErrors compares two error objects as the mode says, reporting
// whether it did; under ErrorsExact, or where a side is not an error
// object, it leaves the comparison to walk.
func (d *pathDiffer) maskedErrors(path string, ref, impl any) bool {
	if d.mode == ErrorsExact {
		return false
	}
	r, rok := isErrorObject(ref)
	i, iok := isErrorObject(impl)
	if !rok || !iok {
		return false
	}
	if d.mode == ErrorsReject {
		return true
	}
	d.walk(path+".code", r["code"], i["code"])
	if rf, named := r["field"]; named {
		d.member(path+".field", rf, true, i, "field")
	}
	return true
}

// members compares two objects member by member, by name.
func (d *pathDiffer) members(path string, ref, impl map[string]any) {
	names := make([]string, 0, len(ref)+len(impl))
	for k := range ref {
		names = append(names, k)
	}
	for k := range impl {
		if _, ok := ref[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		rv, rok := ref[k]
		d.member(path+memberPath(k), rv, rok, impl, k)
	}
}

// member compares ref's member (rv, present when rok) with impl's member k.
func (d *pathDiffer) member(path string, rv any, rok bool, impl map[string]any, k string) {
	iv, iok := impl[k]
	switch {
	case rok && iok:
		d.walk(path, rv, iv)
	case rok:
		d.add(path, render(rv), Absent)
	case iok:
		d.add(path, Absent, render(iv))
	}
}

// elements compares two arrays index by index; the longer one's extra
// elements are Absent on the other side.
func (d *pathDiffer) elements(path string, ref, impl []any) {
	for k := range max(len(ref), len(impl)) {
		p := path + "[" + strconv.Itoa(k) + "]"
		switch {
		case k < len(ref) && k < len(impl):
			d.walk(p, ref[k], impl[k])
		case k < len(ref):
			d.add(p, render(ref[k]), Absent)
		default:
			d.add(p, Absent, render(impl[k]))
		}
	}
}

// add keeps a difference, or counts it once limit are kept.
func (d *pathDiffer) add(path, ref, impl string) {
	if len(d.out) >= d.limit {
		d.more++
		return
	}
	d.out = append(d.out, PathDiff{Path: path, Ref: ref, Impl: impl})
}

// memberPath is the JSONPath step to member k: `.k`, or `["k"]` (k as a
// JSON string) where k is not an identifier.
func memberPath(k string) string {
	if isIdentifier(k) {
		return "." + k
	}
	b, _ := json.Marshal(k) // a string always encodes
	return "[" + string(b) + "]"
}

// isIdentifier reports whether k is a name JSONPath's dot notation writes
// as is: an ASCII letter or underscore, then letters, digits, underscores.
func isIdentifier(k string) bool {
	for i, c := range k {
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return k != ""
}

// sameScalar reports whether two decoded JSON scalars are equal: numbers
// by their decimal value, everything else by kind and value.
func sameScalar(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		return ok && sameNumber(string(x), string(y))
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// sameNumber reports whether two JSON number texts write the same decimal
// value, without converting either to a float (which rounds past 2^53) or
// to a big number (which `1e999999999` would make huge).
func sameNumber(a, b string) bool {
	x, okx := decimalOf(a)
	y, oky := decimalOf(b)
	if !okx || !oky {
		return a == b
	}
	return x == y
}

// decimal is a number as sign × digits × 10^exp, with digits free of
// leading and trailing zeros (zero: no digits, exponent 0, not negative).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// decimalOf normalizes a JSON number text; false when it is not one or its
// exponent does not fit an int64.
func decimalOf(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return d, false
	}
	if hasExp {
		e, err := strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64)
		if err != nil {
			return d, false
		}
		d.exp = e
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if d.exp < -1<<62 || d.exp > 1<<62 {
		return d, false
	}
	d.exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	d.exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	if d.digits == "" {
		return decimal{}, true
	}
	return d, true
}

// render is v as compact JSON (numbers as written, no HTML escaping), cut
// to maxPathValue bytes.
func render(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return cut(strings.TrimSuffix(buf.String(), "\n"))
}

// renderRaw is the JSON text b compacted and cut, or as is where it is
// not JSON.
func renderRaw(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return cut(string(b))
	}
	return cut(buf.String())
}

// cut shortens s to maxPathValue bytes at a rune boundary, ending in "…".
func cut(s string) string {
	if len(s) <= maxPathValue {
		return s
	}
	n := maxPathValue
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
