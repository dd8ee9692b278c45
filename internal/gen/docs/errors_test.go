package main

import (
	"slices"
	"sync"
	"testing"
)

// built is the errors page's model, walked once for every test below.
var built = sync.OnceValues(func() (*errorsModel, error) { return buildErrors(root) })

func errorsModelOf(t *testing.T) *errorsModel {
	t.Helper()
	m, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestErrorsPageIsCurrent keeps docs/errors.md generated from the source
// of ref, spec and catalog: run `make docs` after adding, removing or
// rewording an error, or adding an op.
func TestErrorsPageIsCurrent(t *testing.T) { current(t, ErrorsPage) }

// TestErrorsPageHoldsEveryGoldenError checks the walk against what ref
// really returns: every error object of the golden fixtures (a rejected
// case's, or a script step's inside an output) matches a row of its op or
// of the input's decoding, by code and by message. A walk that missed a
// path to a check (a method value, a function passed on, a table of
// checks) fails here.
func TestErrorsPageHoldsEveryGoldenError(t *testing.T) {
	m := errorsModelOf(t)
	golden, err := goldenErrors(root)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	missed := map[string][]string{}
	for _, o := range m.ops {
		sites := slices.Concat(o.sites, m.decode.sites)
		for _, g := range golden[o.name] {
			total++
			if !slices.ContainsFunc(sites, func(s errSite) bool { return s.code == g.Code && s.messageRegexp().MatchString(g.Message) }) {
				k := o.name + " " + g.Code
				missed[k] = append(missed[k], g.Message)
			}
		}
	}
	if total < 1000 {
		t.Errorf("the golden fixtures hold %d error objects; want the full set (over 1000)", total)
	}
	for k, msgs := range missed {
		t.Errorf("%s: %d golden errors match no row of docs/errors.md, e.g. %q", k, len(msgs), msgs[0])
	}
}

// TestErrorsPageNamesEveryCode: every row names a sentinel the walk
// resolved (never "?"), and the codes table lists exactly the codes of the
// rows.
func TestErrorsPageNamesEveryCode(t *testing.T) {
	m := errorsModelOf(t)
	codes := map[string]bool{}
	for _, o := range append([]opErrors{m.decode}, m.ops...) {
		for _, s := range o.sites {
			if s.code == "?" {
				t.Errorf("%s: a row of unresolved sentinel: field %q, bound %q", o.name, s.field, s.bound)
			}
			codes[s.code] = true
		}
	}
	if len(m.codes) != len(codes) {
		t.Errorf("the codes table has %d codes, the rows %d", len(m.codes), len(codes))
	}
	for _, s := range m.codes {
		if !codes[s.code] || s.text == "" {
			t.Errorf("code %q (%q) is in the table but in no row, or has no text", s.code, s.text)
		}
	}
}

// TestErrorsPageListsTheCounterScriptByStep pins what the page says of
// hicache.layer_done_script (docs/spec/radix-acks.md §5.3), the script an
// adapter author met first: each step kind's errors under that step, the
// whole-script checks under none, and the steps[i]. prefix its trace puts
// before every step's field.
func TestErrorsPageListsTheCounterScriptByStep(t *testing.T) {
	m := errorsModelOf(t)
	var o opErrors
	for _, x := range m.ops {
		if x.name == "hicache.layer_done_script" {
			o = x
		}
	}
	var got []string
	for _, s := range o.sites {
		got = append(got, s.step+" "+s.code+" "+codeSpan(s.field))
	}
	for _, want := range []string{
		" bad_load_pools `layers`", " bad_enum `steps[{i}].op`", "update_producer slot_busy `slot`",
		"complete bad_slot `slot`", "complete layer_out_of_order `layer`", "set_consumer bad_slot `slot`", "ready layer_out_of_order `layer`",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("hicache.layer_done_script lacks the row %q; rows: %q", want, got)
		}
	}
	if len(o.rewrites) != 1 || codeSpan(o.rewrites[0]) != "`steps[{i}].{field}`" {
		t.Errorf("rewrites %q, want the one steps[{i}].{field}", o.rewrites)
	}
	for _, s := range o.sites {
		if s.code == "bad_slot" && o.examples[slices.Index(o.sites, s)] == "" {
			t.Errorf("the bad_slot row of step %s has no golden example", s.step)
		}
	}
}

// TestMessageRegexpMatchesWhatTheTemplateCanProduce: a placeholder
// matches any text, a prefix before the field (a rewrite) is allowed, and
// the literal parts must match exactly.
func TestMessageRegexpMatchesWhatTheTemplateCanProduce(t *testing.T) {
	s := errSite{code: "bad_slot", text: "slot outside the counter's ring", field: "slot",
		value: placeholder("slot"), bound: "in [0, " + placeholder("n") + ")"}
	rx := s.messageRegexp()
	for msg, want := range map[string]bool{
		"slot = 3: want in [0, 3) (slot outside the counter's ring)":           true,
		"steps[2].slot = -1: want in [0, 3) (slot outside the counter's ring)": true,
		"slot = 3: want in [0, 3] (slot outside the counter's ring)":           false,
		"slot = 3: want in [0, 3) (slot outside the counter's ring) extra":     false,
	} {
		if rx.MatchString(msg) != want {
			t.Errorf("%q: match = %v, want %v (%s)", msg, !want, want, rx)
		}
	}
	if got := s.message(); got != "slot = "+placeholder("slot")+": want in [0, "+placeholder("n")+") (slot outside the counter's ring)" {
		t.Errorf("message template %q", got)
	}
}

// TestCodeSpanKeepsATableCellWhole: placeholders as {expr}, a pipe
// escaped, a backtick fenced by a longer run, an empty template a dash.
func TestCodeSpanKeepsATableCellWhole(t *testing.T) {
	for in, want := range map[string]string{
		"a " + placeholder("x.y") + " b": "`a {x.y} b`",
		"x | y":                          "`x \\| y`",
		"a `b` c":                        "`` a `b` c ``",
		"":                               "—",
	} {
		if got := codeSpan(in); got != want {
			t.Errorf("codeSpan(%q) = %s, want %s", in, got, want)
		}
	}
}
