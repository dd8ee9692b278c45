package equiv

import (
	"errors"
	"fmt"
	"sync"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// Shrink runs the rapid property of impl over kind outside `go test` and
// returns the minimal counterexample rapid shrank to, or nil if rapid found
// no failure; a stateful op's counterexample is then made 1-minimal by
// step deletion (minimalScript). rapid's -rapid.* settings (seed, checks)
// apply; kvtwin audit sets them from its own flags.
func (s *Spec[In, Out]) Shrink(implName string, impl catalog.Func[In, Out], kind Kind) *Failure {
	return s.shrink(fmt.Sprintf("%s/%s/%s", s.Op.OpName, implName, kind), kind, func(in In, want *spec.Sentinel) *Failure {
		return s.checkFailure(implName, impl, "shrunk", 0, in, want)
	})
}

// shrink runs rapid over kind with recheck (nil: the case passes) as the
// property, then the step-deletion pass on the case rapid shrank to,
// rechecking smaller scripts the same way.
func (s *Spec[In, Out]) shrink(name string, kind Kind, recheck func(In, *spec.Sentinel) *Failure) *Failure {
	var last lastCase[In]
	runRecording(&recordingTB{name: name}, func(t *rapid.T) {
		in, want := s.drawFrom(t, kind)
		if f := recheck(in, want); f != nil {
			last.set(f, in, want)
			t.Fatal(f.Error())
		}
	})
	f, in, want := last.get()
	if f == nil {
		return nil
	}
	return s.minimalScript(f, in, func(smaller In) *Failure { return recheck(smaller, want) })
}

// runRecording runs rapid.Check on prop under tb outside `go test`; tb's
// FailNow and an explicit errStop end the check, and the failure prop
// met last is the minimal counterexample.
func runRecording(tb *recordingTB, prop func(*rapid.T)) {
	defer func() {
		if r := recover(); r != nil && r != errStop {
			panic(r)
		}
	}()
	rapid.Check(tb, prop)
}

var errStop = errors.New("rapid stopped the check")

// recordingTB is the rapid.TB that Shrink runs under: it turns FailNow
// into a recoverable stop (the property itself keeps its failures).
type recordingTB struct {
	mu     sync.Mutex
	name   string
	failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Name() string          { return r.name }
func (r *recordingTB) Logf(string, ...any)   {}
func (r *recordingTB) Log(...any)            {}
func (r *recordingTB) Skipf(string, ...any)  { panic(errStop) }
func (r *recordingTB) Skip(...any)           { panic(errStop) }
func (r *recordingTB) SkipNow()              { panic(errStop) }
func (r *recordingTB) Errorf(string, ...any) { r.Fail() }
func (r *recordingTB) Error(...any)          { r.Fail() }
func (r *recordingTB) Fatalf(string, ...any) { r.FailNow() }
func (r *recordingTB) Fatal(...any)          { r.FailNow() }
func (r *recordingTB) FailNow()              { r.Fail(); panic(errStop) }
func (r *recordingTB) Fail()                 { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recordingTB) Failed() bool          { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
