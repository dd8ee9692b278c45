package equiv

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// partialSeeds is how many generated cases of each kind the partial
// declaration tests draw per declaration.
const partialSeeds = 150

// declaredEveryOther is a declaration of s's required kinds and every
// other kind of its vocabulary, with every option off.
func declaredEveryOther[In, Out any](s *Spec[In, Out]) Declaration {
	v := s.Vocabulary
	d := Declaration{Steps: slices.Clone(v.Required), Options: map[string]bool{}}
	for i, k := range v.Steps {
		if i%2 == 0 && !slices.Contains(d.Steps, k) {
			d.Steps = append(d.Steps, k)
		}
	}
	for _, o := range v.Options {
		d.Options[o.Name] = false
	}
	return d
}

// checkGeneratedInside draws partialSeeds valid and invalid cases of s
// restricted to d and requires each to use only declared kinds and no
// option declared off (Vocabulary.Uses), each valid one to be accepted and
// each invalid one rejected with its sentinel by ref (the generators'
// contract), and every declared kind to be generated at least once.
func checkGeneratedInside[In, Out any](t *testing.T, s *Spec[In, Out], d Declaration) {
	t.Helper()
	rs, _, err := s.Restrict(d)
	if err != nil {
		t.Fatalf("%s: %v", s.Op.OpName, err)
	}
	seen := map[string]bool{}
	for _, kind := range []Kind{Valid, Invalid} {
		for seed := range partialSeeds {
			in, _ := rs.draw(kind, seed)
			steps, options := s.Vocabulary.Uses(in)
			for _, k := range steps {
				seen[k] = true
				if d.Steps != nil && !slices.Contains(d.Steps, k) {
					t.Fatalf("%s %s/%d under %v uses step kind %q: %s", s.Op.OpName, kind, seed, d.Steps, k, mustMarshal(t, in))
				}
			}
			for _, o := range options {
				if on, named := d.Options[o]; named && !on {
					t.Fatalf("%s %s/%d uses option %q, declared off: %s", s.Op.OpName, kind, seed, o, mustMarshal(t, in))
				}
			}
			if f := rs.Trial("ref", rs.Op.Ref, kind, seed); f != nil {
				t.Fatalf("%s under %v breaks the generators' contract: %v", s.Op.OpName, d.Steps, f)
			}
		}
	}
	for _, k := range d.Steps {
		if !seen[k] {
			t.Errorf("%s under %v: %d cases never used the declared kind %q", s.Op.OpName, d.Steps, 2*partialSeeds, k)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := catalog.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGeneratedScriptsUseOnlyTheDeclaredStepKinds: under a partial
// declaration of every script op (its required kinds and every other
// kind, every option off, and for some ops a second declaration), every
// generated case, valid and invalid, stays inside the declaration, still
// meets the generators' contract, and every declared kind is still drawn.
func TestGeneratedScriptsUseOnlyTheDeclaredStepKinds(t *testing.T) {
	checkGeneratedInside(t, RadixScript(), declaredEveryOther(RadixScript()))
	checkGeneratedInside(t, RadixScript(), Declaration{Steps: []string{"create", "match", "score", "insert"}, Options: map[string]bool{"hashed_score": false}})
	checkGeneratedInside(t, RadixScript(), Declaration{Steps: []string{"create", "insert", "evict"}}) // the bad token rides on an insert
	checkGeneratedInside(t, RadixScript(), Declaration{Steps: []string{"create", "lock"}})            // and on no step: an unknown op instead
	checkGeneratedInside(t, HiCacheAckScript(), declaredEveryOther(HiCacheAckScript()))
	checkGeneratedInside(t, HiCacheLayerDoneScript(), declaredEveryOther(HiCacheLayerDoneScript()))
	checkGeneratedInside(t, HiCacheLoadScript(), declaredEveryOther(HiCacheLoadScript()))
	checkGeneratedInside(t, HiCacheLoadScript(), Declaration{Steps: []string{}})
	checkGeneratedInside(t, TransferPerLayerScript(), declaredEveryOther(TransferPerLayerScript()))
	checkGeneratedInside(t, KVEvApply(), declaredEveryOther(KVEvApply()))
	checkGeneratedInside(t, KVEvApply(), Declaration{Options: map[string]bool{"hashed_score": false}})
}

// TestRadixScriptsUnderTheIssuesDeclarationHoldOnlyItsFourKinds reads the
// step ops of generated radix.script cases directly (not through the
// vocabulary): under create, insert, match and evict with hashed scores
// off, no valid or invalid script holds a lock, unlock, score or
// plan_evict, over many seeds, while the unrestricted generator holds
// them in most scripts.
func TestRadixScriptsUnderTheIssuesDeclarationHoldOnlyItsFourKinds(t *testing.T) {
	declared := []string{"create", "insert", "match", "evict"}
	rs, _, err := RadixScript().Restrict(Declaration{Steps: declared, Options: map[string]bool{"hashed_score": false}})
	if err != nil {
		t.Fatal(err)
	}
	undeclared := func(in spec.RadixScriptInput) string {
		for _, s := range in.Steps {
			if slices.Contains([]string{"lock", "unlock", "score", "plan_evict"}, s.Op) {
				return s.Op
			}
		}
		return ""
	}
	outside := 0
	for seed := range 4 * partialSeeds {
		for _, kind := range []Kind{Valid, Invalid} {
			if in, _ := rs.draw(kind, seed); undeclared(in) != "" {
				t.Fatalf("%s/%d holds a %s step: %s", kind, seed, undeclared(in), mustMarshal(t, in))
			}
		}
		if undeclared(RadixScript().Valid.Example(seed)) != "" {
			outside++
		}
	}
	if outside < 2*partialSeeds {
		t.Errorf("only %d of %d unrestricted scripts hold an undeclared kind: the test would not see a generator ignoring the declaration", outside, 4*partialSeeds)
	}
}

// TestEveryKindOfAVocabularyIsUsedByTheUnrestrictedSuite: Uses names
// every step kind of each script op on the op's own tables and generated
// cases (so a Uses that misses a kind, and would let a table case using
// it through a declaration, fails here), and the vocabularies hold no
// kind twice.
func TestEveryKindOfAVocabularyIsUsedByTheUnrestrictedSuite(t *testing.T) {
	checkUsesEveryKind(t, RadixScript())
	checkUsesEveryKind(t, HiCacheAckScript())
	checkUsesEveryKind(t, HiCacheLayerDoneScript())
	checkUsesEveryKind(t, HiCacheLoadScript())
	checkUsesEveryKind(t, TransferPerLayerScript())
	checkUsesEveryKind(t, KVEvApply())
}

func checkUsesEveryKind[In, Out any](t *testing.T, s *Spec[In, Out]) {
	t.Helper()
	v := s.Vocabulary
	seen := map[string]bool{}
	var options []string
	note := func(in In) {
		steps, opts := v.Uses(in)
		for _, k := range steps {
			seen[k] = true
		}
		options = append(options, opts...)
	}
	for _, c := range s.tableCases() {
		note(c.In)
	}
	for seed := range partialSeeds {
		note(s.Valid.Example(seed))
	}
	for i, k := range v.Steps {
		if !seen[k] {
			t.Errorf("%s: Uses never names the step kind %q", s.Op.OpName, k)
		}
		if slices.Contains(v.Steps[:i], k) {
			t.Errorf("%s: the vocabulary lists %q twice", s.Op.OpName, k)
		}
	}
	for _, o := range v.Options {
		if !slices.Contains(options, o.Name) {
			t.Errorf("%s: Uses never names the option %q", s.Op.OpName, o.Name)
		}
	}
}

// TestAFullDeclarationDrawsWhatTheSpecDraws: a declaration of every kind
// with every option on audits the whole op: nothing is reported left out,
// and the generators draw exactly the unrestricted spec's cases (so
// partial declarations change nothing for an adapter that declares none).
func TestAFullDeclarationDrawsWhatTheSpecDraws(t *testing.T) {
	s := RadixScript()
	rs, r, err := s.Restrict(Declaration{Steps: slices.Clone(s.Vocabulary.Steps), Options: map[string]bool{"hashed_score": true}})
	if err != nil || r.Partial() {
		t.Fatalf("full declaration: %v, left out %+v", err, r)
	}
	for seed := range 40 {
		for _, kind := range []Kind{Valid, Invalid} {
			a, _ := s.draw(kind, seed)
			b, _ := rs.draw(kind, seed)
			if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
				t.Fatalf("%s/%d differs under a full declaration", kind, seed)
			}
		}
	}
	if same, _, _ := s.Restrict(Declaration{}); same != s {
		t.Error("a zero declaration does not return the spec itself")
	}
}

// TestTablesOutsideTheDeclarationAreSkippedAndNamed: the restricted
// tables hold exactly the table cases inside the declaration, and the
// restriction names every other one.
func TestTablesOutsideTheDeclarationAreSkippedAndNamed(t *testing.T) {
	s := RadixScript()
	rs, r, err := s.Restrict(Declaration{Steps: []string{"create", "insert", "match", "evict"}})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, c := range rs.tableCases() {
		kept = append(kept, c.Name)
		for _, st := range c.In.Steps {
			if slices.Contains([]string{"lock", "unlock", "score", "plan_evict"}, st.Op) {
				t.Errorf("table case %s is kept but holds a %s step", c.Name, st.Op)
			}
		}
	}
	var all []string
	for _, c := range s.tableCases() {
		all = append(all, c.Name)
	}
	if len(kept) == 0 || len(r.TablesSkipped) == 0 || len(kept)+len(r.TablesSkipped) != len(all) {
		t.Errorf("%d table cases kept and %d skipped of %d: want every case in one list", len(kept), len(r.TablesSkipped), len(all))
	}
	for _, name := range r.TablesSkipped {
		if slices.Contains(kept, name) || !slices.Contains(all, name) {
			t.Errorf("skipped %q is kept too, or is no table case", name)
		}
	}
	if !slices.Equal(r.StepsNotAudited, []string{"score", "lock", "unlock", "plan_evict"}) || r.OptionsNotAudited != nil {
		t.Errorf("left out steps %q, options %q; want score, lock, unlock, plan_evict and none", r.StepsNotAudited, r.OptionsNotAudited)
	}
}

// TestRestrictRefusesWhatTheOpLacks: every bad declaration is an error
// that names the op, the member and the values allowed.
func TestRestrictRefusesWhatTheOpLacks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		says string
	}{
		{"unknown kind", restrictErr(RadixScript(), Declaration{Steps: []string{"create", "Insert"}}),
			`op radix.script: declaration member steps[1] "Insert": not a step kind of the op (want kinds among create, insert, match, score, lock, unlock, evict, plan_evict)`},
		{"kind twice", restrictErr(TransferPerLayerScript(), Declaration{Steps: []string{"create", "register", "register"}}),
			`op transfer.per_layer_script: declaration member steps[2] "register": declared twice`},
		{"required kind missing", restrictErr(HiCacheAckScript(), Declaration{Steps: []string{"node", "reserve"}}),
			`op hicache.ack_script: declaration member steps lacks "create", which every script of the op needs`},
		{"a kvev cursor kind missing", restrictErr(KVEvApply(), Declaration{Steps: []string{"live", "replay", "restart"}}),
			`op kvev.apply: declaration member steps lacks "replay_failed"`},
		{"unknown option", restrictErr(RadixScript(), Declaration{Options: map[string]bool{"exact_only": true}}),
			`op radix.script: declaration member options.exact_only: not an option of the op (want options among hashed_score)`},
		{"an option of an op with none", restrictErr(HiCacheLayerDoneScript(), Declaration{Options: map[string]bool{"hashed_score": false}}),
			`op hicache.layer_done_script: declaration member options.hashed_score: not an option of the op (want none: the op has no options)`},
		{"steps of a pure op", restrictErr(TransferGroupContiguous(), Declaration{Steps: []string{}}),
			`op transfer.group_contiguous: declaration member steps: the op has no step kinds or options to declare`},
		{"steps of a script op without kinds", restrictErr(AdmissionScript(), Declaration{Steps: []string{"round"}}),
			`op admission.script: declaration member steps: the op has no step kinds or options to declare`},
		{"options of a pure op", restrictErr(TransferGroupContiguous(), Declaration{Options: map[string]bool{"x": true}}),
			`op transfer.group_contiguous: declaration member options: the op has no step kinds or options to declare`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.name, c.err, c.says)
		}
	}
}

func restrictErr[In, Out any](s *Spec[In, Out], d Declaration) error {
	_, _, err := s.Restrict(d)
	return err
}

// TestHashedScoreOffLeavesThePrefixHashesUncompared: an adapter without
// the XXH3 prefix-hash chain answers radix.script's tree states without
// prefix_hashes; declared with hashed_score off it passes, and it fails
// when it declares the option on (or nothing), as it fails when any
// other member of the state differs.
func TestHashedScoreOffLeavesThePrefixHashesUncompared(t *testing.T) {
	in := steps(create(2), ins([]int64{1, 2, 3, 4}), mat(1, 2))
	answer := func(edit func(*spec.RadixScriptOutput)) Remote {
		return remoteFunc(func(string, []byte) (fixtures.Result, error) {
			out, err := catalog.RadixScript().Fast(spec.DefaultLimits(), in)
			if err != nil {
				t.Fatal(err)
			}
			for i := range out.Tree.Nodes {
				out.Tree.Nodes[i].PrefixHashes = nil
			}
			edit(&out)
			b, err := json.Marshal(out)
			return fixtures.Result{Bytes: b}, err
		})
	}
	noHashes := answer(func(*spec.RadixScriptOutput) {})
	otherTick := answer(func(o *spec.RadixScriptOutput) { o.Tree.Tick++ })
	off, _, err := RadixScript().Restrict(Declaration{Options: map[string]bool{"hashed_score": false}})
	if err != nil {
		t.Fatal(err)
	}
	on, _, _ := RadixScript().Restrict(Declaration{Options: map[string]bool{"hashed_score": true}})
	if f := off.remoteCheck("exec:x", noHashes, ErrorsExact, "c", 0, in, nil); f != nil {
		t.Errorf("hashed_score off, no prefix hashes: %v", f)
	}
	if f := off.remoteCheck("exec:x", otherTick, ErrorsExact, "c", 0, in, nil); f == nil {
		t.Error("hashed_score off: another tick passed; only prefix_hashes may be left out")
	}
	for name, s := range map[string]*Spec[spec.RadixScriptInput, spec.RadixScriptOutput]{"on": on, "undeclared": RadixScript()} {
		if f := s.remoteCheck("exec:x", noHashes, ErrorsExact, "c", 0, in, nil); f == nil {
			t.Errorf("hashed_score %s: an answer without prefix hashes passed", name)
		}
	}
}

// TestARestrictedSampleStaysInsideTheDeclaration: the catalog's
// radix.script sample locks a node, so under a declaration without lock
// the sample adapter check sends is a generated one inside it.
func TestARestrictedSampleStaysInsideTheDeclaration(t *testing.T) {
	s := RadixScript()
	if s.Sample().Steps == nil || !slices.ContainsFunc(s.Sample().Steps, func(st spec.RadixStep) bool { return st.Op == spec.StepLock }) {
		t.Fatal("the unrestricted sample is not the catalog's, which locks a node")
	}
	rs, _, err := s.Restrict(Declaration{Steps: []string{"create", "insert", "match", "evict"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range rs.Sample().Steps {
		if !slices.Contains([]string{"create", "insert", "match", "evict"}, st.Op) {
			t.Errorf("the restricted sample holds a %s step", st.Op)
		}
	}
}

// TestAdaptersDocListsEveryVocabulary: docs/adapters.md's table of what a
// partial declaration may name has one row per op with a vocabulary,
// exactly as the vocabulary reads (kinds in order, required ones in bold,
// options), and no row for an op without one.
func TestAdaptersDocListsEveryVocabulary(t *testing.T) {
	page, err := os.ReadFile("../docs/adapters.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(page), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	rows := 0
	for _, s := range Suites() {
		row := s.(interface{ docRow() string }).docRow()
		if row == "" {
			if strings.Contains(string(page), "| `"+s.Name()+"` |") {
				t.Errorf("docs/adapters.md has a row for %s, which takes no declaration", s.Name())
			}
			continue
		}
		rows++
		if !lines[row] {
			t.Errorf("docs/adapters.md lacks the row\n%s", row)
		}
	}
	if rows < 6 {
		t.Errorf("%d ops have a vocabulary, want every script op with step kinds (6)", rows)
	}
}
