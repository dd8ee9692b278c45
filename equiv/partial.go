package equiv

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"pgregory.net/rapid"
)

// Partial declarations (docs/adapters.md "Partial declarations"): an
// adapter's op listing may say which step kinds and options of a script op
// it supports. The audit then generates, shrinks and replays only scripts
// inside that part, and reports the rest as not audited, instead of
// turning every step the adapter lacks into a transport error.

// Declaration is what an adapter's listing object says it supports of one
// op: its "steps" and "options" members.
type Declaration struct {
	// Steps are the step kinds declared, in the listing's order; nil when
	// the listing has no steps member (every kind).
	Steps []string
	// Options are the options the listing names, with their values; an
	// option not named is supported (its default, true).
	Options map[string]bool
}

// IsZero reports whether d declares nothing beyond the op's name, so the
// whole op is audited.
func (d Declaration) IsZero() bool { return d.Steps == nil && len(d.Options) == 0 }

// Option is a feature of a script op's steps that an adapter may declare
// off (hashed_score: scores by the prefix-hash chain).
type Option struct {
	// Name is the option's name in a listing's options member.
	Name string
	// About says what the generators leave out when the option is off.
	About string
	// Unchecked are the output members only an implementation of the
	// option computes, as paths ("tree.nodes[].prefix_hashes": the member
	// prefix_hashes of each element of tree.nodes). With the option off
	// they are left out of the comparison on both sides, so an adapter
	// may omit them.
	Unchecked []string
}

// Vocabulary is what a declaration of a script op may name, and how the
// op's generators honour it.
type Vocabulary[In any] struct {
	// Steps are every step kind of the op, in its spec's order.
	Steps []string
	// Required are the kinds no script can do without (the create that
	// must come first); a declaration of steps must include them.
	Required []string
	// Options are the op's options; each is on unless declared false.
	Options []Option
	// Uses lists the step kinds of Steps and the options an input
	// exercises. A kind outside Steps is not listed: rejecting an unknown
	// kind is part of every declaration.
	Uses func(In) (steps, options []string)
	// Generate returns the valid and invalid generators restricted to c;
	// under Coverage{} they draw exactly what the op's Spec draws.
	Generate func(c Coverage) (*rapid.Generator[In], *rapid.Generator[Bad[In]])
}

// Coverage is the part of a vocabulary generation stays inside. The zero
// Coverage is every step kind with every option on.
type Coverage struct {
	steps map[string]bool // nil: every kind
	off   map[string]bool // options declared false
}

// Step reports whether scripts may use step kind k.
func (c Coverage) Step(k string) bool { return c.steps == nil || c.steps[k] }

// Option reports whether scripts may use the option called name.
func (c Coverage) Option(name string) bool { return !c.off[name] }

// Allowed is the kinds of ks that c allows, in order; ks itself (not a
// copy) when c allows every one, so a generator sampling from it draws
// exactly what it drew before partial declarations existed.
func (c Coverage) Allowed(ks []string) []string {
	if c.steps == nil {
		return ks
	}
	var out []string
	for _, k := range ks {
		if c.Step(k) {
			out = append(out, k)
		}
	}
	if len(out) == len(ks) {
		return ks
	}
	return out
}

// Restriction is what a declaration left out of an op's audit.
type Restriction struct {
	// StepsNotAudited are the op's step kinds the declaration omits, in
	// the vocabulary's order.
	StepsNotAudited []string `json:"steps_not_audited,omitempty"`
	// OptionsNotAudited are the options declared false.
	OptionsNotAudited []string `json:"options_not_audited,omitempty"`
	// TablesSkipped are the boundary and regression cases (fixture names)
	// that use an omitted kind or option, so were not run.
	TablesSkipped []string `json:"tables_skipped,omitempty"`
}

// Partial reports whether anything of the op was left out.
func (r Restriction) Partial() bool {
	return len(r.StepsNotAudited)+len(r.OptionsNotAudited)+len(r.TablesSkipped) > 0
}

// Restrict returns the spec audited under d: its generators restricted to
// the declared part (so valid, invalid and shrunk cases all stay inside
// it), its tables without the cases that leave it, and what was left out.
// A zero d returns s itself. A declaration naming a kind or option the op
// lacks, a kind twice, or steps without a Required kind, and any steps or
// options for an op without a Vocabulary, is an error naming the op, the
// member and the values allowed.
func (s *Spec[In, Out]) Restrict(d Declaration) (*Spec[In, Out], Restriction, error) {
	if d.IsZero() {
		return s, Restriction{}, nil
	}
	c, r, err := s.coverage(d)
	if err != nil {
		return nil, Restriction{}, err
	}
	v := s.Vocabulary
	out := *s
	out.cover = &c
	out.Valid, out.Invalid = v.Generate(c)
	out.Boundary, out.Regressions = nil, nil
	for _, tc := range s.Boundary {
		if s.inside(c, tc.In) {
			out.Boundary = append(out.Boundary, tc)
		} else {
			r.TablesSkipped = append(r.TablesSkipped, "boundary/"+tc.Name)
		}
	}
	for _, tc := range s.Regressions {
		if s.inside(c, tc.In) {
			out.Regressions = append(out.Regressions, tc)
		} else {
			r.TablesSkipped = append(r.TablesSkipped, "regression/"+tc.Name)
		}
	}
	return &out, r, nil
}

// inside reports whether in uses only what c allows.
func (s *Spec[In, Out]) inside(c Coverage, in In) bool {
	steps, options := s.Vocabulary.Uses(in)
	for _, k := range steps {
		if !c.Step(k) {
			return false
		}
	}
	for _, o := range options {
		if !c.Option(o) {
			return false
		}
	}
	return true
}

// coverage validates d against the op's vocabulary and returns the
// coverage it declares, with the kinds and options it leaves out.
func (s *Spec[In, Out]) coverage(d Declaration) (Coverage, Restriction, error) {
	op, v := s.Op.OpName, s.Vocabulary
	if v == nil {
		member := "options"
		if d.Steps != nil {
			member = "steps"
		}
		return Coverage{}, Restriction{}, fmt.Errorf("op %s: declaration member %s: the op has no step kinds or options to declare (declare it by its name alone)", op, member)
	}
	var c Coverage
	var r Restriction
	var err error
	if d.Steps != nil {
		if c.steps, r.StepsNotAudited, err = declaredSteps(op, v.Steps, v.Required, d.Steps); err != nil {
			return Coverage{}, Restriction{}, err
		}
	}
	if c.off, r.OptionsNotAudited, err = declaredOptions(op, v.Options, d.Options); err != nil {
		return Coverage{}, Restriction{}, err
	}
	return c, r, nil
}

// declaredSteps checks the declared kinds against the op's kinds (each
// known, none twice, every required one present) and returns them as a
// set, with the kinds left out in the vocabulary's order.
func declaredSteps(op string, kinds, required, declared []string) (map[string]bool, []string, error) {
	set := map[string]bool{}
	for i, k := range declared {
		switch {
		case !slices.Contains(kinds, k):
			return nil, nil, fmt.Errorf("op %s: declaration member steps[%d] %s: not a step kind of the op (want kinds among %s)", op, i, strconv.Quote(k), strings.Join(kinds, ", "))
		case set[k]:
			return nil, nil, fmt.Errorf("op %s: declaration member steps[%d] %s: declared twice", op, i, strconv.Quote(k))
		}
		set[k] = true
	}
	for _, k := range required {
		if !set[k] {
			return nil, nil, fmt.Errorf("op %s: declaration member steps lacks %s, which every script of the op needs (want %s among %s)", op, strconv.Quote(k), strings.Join(required, ", "), strings.Join(kinds, ", "))
		}
	}
	var left []string
	for _, k := range kinds {
		if !set[k] {
			left = append(left, k)
		}
	}
	return set, left, nil
}

// declaredOptions checks the declared options against the op's (each
// known) and returns the ones set off, as a set and in the vocabulary's
// order.
func declaredOptions(op string, options []Option, declared map[string]bool) (map[string]bool, []string, error) {
	names := make([]string, len(options))
	for i, o := range options {
		names[i] = o.Name
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if !slices.Contains(names, name) {
			allowed := "none: the op has no options"
			if len(names) > 0 {
				allowed = "options among " + strings.Join(names, ", ")
			}
			return nil, nil, fmt.Errorf("op %s: declaration member options.%s: not an option of the op (want %s)", op, name, allowed)
		}
	}
	var off map[string]bool
	var left []string
	for _, name := range names {
		if on, named := declared[name]; named && !on {
			if off == nil {
				off = map[string]bool{}
			}
			off[name] = true
			left = append(left, name)
		}
	}
	return off, left, nil
}

// stepKinds is a Uses helper: the kinds of ops that are in vocab, each
// once, in order of first use.
func stepKinds(vocab []string, ops iter.Seq[string]) []string {
	var out []string
	for k := range ops {
		if slices.Contains(vocab, k) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Sample is a small valid input inside the spec's declared part: the
// catalog's sample, or the first generated valid input when a declaration
// (Restrict) leaves the sample out.
func (s *Spec[In, Out]) Sample() In {
	if s.cover == nil || s.inside(*s.cover, s.Op.Sample) {
		return s.Op.Sample
	}
	return s.Valid.Example(0)
}

// unchecked is the output paths the options c sets off leave out of the
// comparison (Option.Unchecked); nil for a spec not Restrict-ed.
func (s *Spec[In, Out]) unchecked() []string {
	if s.cover == nil {
		return nil
	}
	var paths []string
	for _, o := range s.Vocabulary.Options {
		if !s.cover.Option(o.Name) {
			paths = append(paths, o.Unchecked...)
		}
	}
	return paths
}

// dropPaths is the JSON document b without the members paths name (see
// Option.Unchecked), re-encoded with sorted members and numbers as written;
// b itself when it does not decode.
func dropPaths(b []byte, paths []string) []byte {
	var v any
	if decodeNumbers(b, &v) != nil {
		return b
	}
	for _, p := range paths {
		dropPath(v, strings.Split(p, "."))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// dropPath deletes the member path names from v: each segment a member,
// one ending in [] each element of the array that member holds.
func dropPath(v any, path []string) {
	m, ok := v.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	name, each := strings.CutSuffix(path[0], "[]")
	switch {
	case len(path) == 1 && !each:
		delete(m, name)
	case each:
		list, _ := m[name].([]any)
		for _, e := range list {
			dropPath(e, path[1:])
		}
	default:
		dropPath(m[name], path[1:])
	}
}

// docRow is the op's row of docs/adapters.md's table of what a partial
// declaration may name: the op, its step kinds (required ones in bold) and
// its options; "" for an op without a Vocabulary.
func (s *Spec[In, Out]) docRow() string {
	v := s.Vocabulary
	if v == nil {
		return ""
	}
	kinds := make([]string, len(v.Steps))
	for i, k := range v.Steps {
		kinds[i] = "`" + k + "`"
		if slices.Contains(v.Required, k) {
			kinds[i] = "**" + kinds[i] + "**"
		}
	}
	options := "—"
	if len(v.Options) > 0 {
		names := make([]string, len(v.Options))
		for i, o := range v.Options {
			names[i] = "`" + o.Name + "`"
		}
		options = strings.Join(names, ", ")
	}
	return fmt.Sprintf("| `%s` | %s | %s |", s.Op.OpName, strings.Join(kinds, ", "), options)
}
