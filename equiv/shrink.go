package equiv

import (
	"errors"
	"fmt"
	"sync"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
)

// Shrink runs the rapid property of impl over kind outside `go test` and
// returns the minimal counterexample rapid shrank to, or nil if rapid found
// no failure. rapid's -rapid.* settings (seed, checks) apply; kvtwin audit
// sets them from its own flags.
func (s *Spec[In, Out]) Shrink(implName string, impl catalog.Func[In, Out], kind Kind) *Failure {
	tb := &recordingTB{name: fmt.Sprintf("%s/%s/%s", s.Op.OpName, implName, kind)}
	runRecording(tb, s.recordingProperty(implName, impl, kind, tb.record))
	return tb.last
}

// runRecording runs rapid.Check on prop under tb outside `go test`; tb's
// FailNow and an explicit errStop end the check, and the failure prop
// recorded last is the minimal counterexample.
func runRecording(tb *recordingTB, prop func(*rapid.T)) {
	defer func() {
		if r := recover(); r != nil && r != errStop {
			panic(r)
		}
	}()
	rapid.Check(tb, prop)
}

var errStop = errors.New("rapid stopped the check")

// recordingTB is the rapid.TB that Shrink runs under: it keeps the last
// failure the property recorded and turns FailNow into a recoverable stop.
type recordingTB struct {
	mu     sync.Mutex
	name   string
	failed bool
	last   *Failure
}

func (r *recordingTB) record(f *Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = f
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
