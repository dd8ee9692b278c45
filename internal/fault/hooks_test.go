package fault

import (
	"reflect"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// TestInstallTakesOneTable pins the table's life cycle in a program without
// fast (this test binary): every hook is nil until Install, Installed then
// returns what was installed, and a second Install panics rather than
// swapping the code the bug zoo runs.
func TestInstallTakesOneTable(t *testing.T) {
	if h := Installed(); !reflect.ValueOf(h).IsZero() {
		t.Fatalf("Installed() before Install = %+v, want the zero table", h)
	}
	calls := 0
	Install(Hooks{NewLayerDoneCounter: func(int, Load) (spec.LayerDoneCounter, error) { calls++; return nil, nil }})
	if _, err := Installed().NewLayerDoneCounter(1, Load{}); err != nil || calls != 1 {
		t.Fatalf("the installed hook was not the one called: calls=%d, err=%v", calls, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Install did not panic")
		}
		if calls != 1 || Installed().NewAckQueue != nil {
			t.Error("a second Install changed the table")
		}
	}()
	Install(Hooks{})
}
