package equiv

import (
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRefPanicIsReportedWithItsInput: when the reference itself panics on
// an input, the check reports the input instead of crashing the audit, for
// an implementation of this build and for one outside it.
func TestRefPanicIsReportedWithItsInput(t *testing.T) {
	s := TransferGroupContiguous()
	op := *s.Op
	op.Ref = func(spec.Limits, spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		panic("ref broke")
	}
	s.Op = &op
	if f := s.Trial("fast", s.Op.Fast, Valid, 3); f == nil || !strings.Contains(f.Reason, "ref panicked: ref broke") || len(f.Input) == 0 {
		t.Errorf("Trial = %v, want a failure naming the ref panic and the input", f)
	}
	never := remoteFunc(func(string, []byte) (fixtures.Result, error) {
		t.Error("the remote was called")
		return fixtures.Result{}, nil
	})
	if f := s.RemoteTrial("exec:x", never, ErrorsCode, Valid, 3); f == nil || !strings.Contains(f.Reason, "ref panicked") {
		t.Errorf("RemoteTrial = %v, want a failure naming the ref panic", f)
	}
}

// TestRemoteAnswersAreComparedCanonicallyUnderTheErrorMode: member order and
// whitespace of an adapter's answer do not matter, values and unknown
// members do, and a rejection is compared as --errors says.
func TestRemoteAnswersAreComparedCanonicallyUnderTheErrorMode(t *testing.T) {
	s := TransferGroupContiguous()
	ok := spec.TransferGroupContiguousInput{Src: []int64{1, 2}, Dst: []int64{5, 6}}
	bad := spec.TransferGroupContiguousInput{Src: []int64{1, 2, 3}, Dst: []int64{5, 6}}
	answer := func(res fixtures.Result) Remote {
		return remoteFunc(func(string, []byte) (fixtures.Result, error) { return res, nil })
	}
	for _, c := range []struct {
		name string
		in   spec.TransferGroupContiguousInput
		res  fixtures.Result
		mode ErrorMode
		pass bool
	}{
		{"reordered members", ok, fixtures.Result{Bytes: []byte(`{ "runs": [ {"count":2, "dst_start":5, "src_start":1} ] }`)}, ErrorsExact, true},
		{"wrong value", ok, fixtures.Result{Bytes: []byte(`{"runs":[{"src_start":1,"dst_start":5,"count":1}]}`)}, ErrorsExact, false},
		{"unknown member", ok, fixtures.Result{Bytes: []byte(`{"runs":[{"src_start":1,"dst_start":5,"count":2}],"x":1}`)}, ErrorsExact, false},
		{"same code, other message, code mode", bad, fixtures.Result{Bytes: []byte(`{"code":"length_mismatch","message":"mine"}`), Rejected: true}, ErrorsCode, true},
		{"same code, other message, exact mode", bad, fixtures.Result{Bytes: []byte(`{"code":"length_mismatch","message":"mine"}`), Rejected: true}, ErrorsExact, false},
		{"other code, code mode", bad, fixtures.Result{Bytes: []byte(`{"code":"negative","message":"x"}`), Rejected: true}, ErrorsCode, false},
		{"other code, reject mode", bad, fixtures.Result{Bytes: []byte(`{"code":"negative","message":"x"}`), Rejected: true}, ErrorsReject, true},
		{"accepts what ref rejects", bad, fixtures.Result{Bytes: []byte(`{"runs":[]}`)}, ErrorsReject, false},
	} {
		want := (*spec.Sentinel)(nil)
		if len(c.in.Src) != len(c.in.Dst) {
			want = spec.ErrLengthMismatch
		}
		f := s.remoteCheck("exec:x", answer(c.res), c.mode, c.name, 0, c.in, want)
		if (f == nil) != c.pass {
			t.Errorf("%s: failure %v, want pass %v", c.name, f, c.pass)
		}
	}
}

// TestAnAdaptersMismatchIsShownAsJSONPaths: a wrong value in an adapter's
// answer is reported at its JSON path (ref → impl) in the failure and its
// text, with the go-cmp diff kept beside it; an answer with a member the
// output lacks shows that member; a case of this build keeps the go-cmp
// diff alone.
func TestAnAdaptersMismatchIsShownAsJSONPaths(t *testing.T) {
	s := TransferGroupContiguous()
	in := spec.TransferGroupContiguousInput{Src: []int64{1, 2, 7}, Dst: []int64{5, 6, 9}}
	for _, c := range []struct {
		answer, want string
	}{
		{`{"runs":[{"src_start":1,"dst_start":5,"count":2},{"src_start":7,"dst_start":9,"count":2}]}`, "$.runs[1].count: 1 → 2"},
		{`{"runs":[{"src_start":1,"dst_start":5,"count":2},{"src_start":7,"dst_start":9,"count":1}],"x":1}`, "$.x: (absent) → 1"},
	} {
		r := remoteFunc(func(string, []byte) (fixtures.Result, error) { return fixtures.Result{Bytes: []byte(c.answer)}, nil })
		f := s.remoteCheck("exec:x", r, ErrorsCode, "c", 0, in, nil)
		if f == nil || len(f.Paths) != 1 || f.Paths[0].String() != c.want || f.Diff == "" {
			t.Fatalf("%s: failure %+v, want one path %q and the go-cmp diff", c.answer, f, c.want)
		}
		if text := f.Error(); !strings.Contains(text, "differences (ref → exec:x):\n  "+c.want) || strings.Contains(text, "diff (-ref") {
			t.Errorf("the failure's text shows no path, or the go-cmp diff too:\n%s", text)
		}
	}
	broken := func(spec.Limits, spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		return spec.TransferGroupContiguousOutput{}, nil
	}
	if f := s.Trial("broken", broken, Valid, 3); f == nil || len(f.Paths) != 0 || !strings.Contains(f.Error(), "diff (-ref +broken)") {
		t.Errorf("a case of this build: %v, want the go-cmp diff and no paths", f)
	}
}

// remoteFunc adapts a function to Remote.
type remoteFunc func(op string, in []byte) (fixtures.Result, error)

func (f remoteFunc) Run(op string, in []byte) (fixtures.Result, error) { return f(op, in) }

// TestAPanickingMutantIsAGapNotAKill: a mutant that only panics is not
// killed by the hunt or by its regression case; value checks must catch a
// historic bug, which returned a wrong value rather than crashing.
func TestAPanickingMutantIsAGapNotAKill(t *testing.T) {
	m := &Mutant[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput]{
		Spec: TransferGroupContiguous(), ID: "group-length-mismatch", Section: "test", About: "panics",
		Fn: func(spec.Limits, spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
			panic("boom")
		},
	}
	if n, f := m.Hunt(20); f != nil || n != 20 {
		t.Errorf("Hunt = %d, %v; want the mutant to survive 20 cases", n, f)
	}
	if f, err := m.Regression(); err != nil || f != nil {
		t.Errorf("Regression = %v, %v; want no kill", f, err)
	}
}
