package fast_test

import (
	"reflect"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
)

// TestInitInstallsEveryHook requires fast's init to fill every field of the
// bug zoo's hook table: a nil field would make its mutants panic instead of
// running fast's code with the bug switched on.
func TestInitInstallsEveryHook(t *testing.T) {
	h := reflect.ValueOf(fault.Installed())
	if h.NumField() == 0 {
		t.Fatal("fault.Hooks has no field")
	}
	for i := range h.NumField() {
		if h.Field(i).IsNil() {
			t.Errorf("fault.Hooks.%s is nil: install fast's hook for it in fast/hooks.go", h.Type().Field(i).Name)
		}
	}
}
