// Command gen writes the registration lists of ops, specs and mutants from
// the source (`make generate`). These are the lists kvtwin would otherwise
// keep by hand (internal/gen/model has the rules): catalog/all_gen.go
// (catalog.All), equiv/suites_gen.go (equiv.Suites) and
// equiv/mutants/all_gen.go (mutants.All). Run it as `make generate` (which
// also regenerates the docs) or `go run ./internal/gen` from the module
// root; -check only reports stale files. It imports nothing of kvtwin, so it
// builds while the lists are stale. TestGeneratedListsAreCurrent fails when a
// committed list differs from what it would write.
package main

import "github.com/kvtwin/kvtwin/internal/gen/model"

func main() { model.Main("gen", "generate", lists) }

// lists renders the registration lists of the checkout at root, by
// repository path.
func lists(root string) (map[string][]byte, error) {
	r, err := model.Load(root)
	if err != nil {
		return nil, err
	}
	return r.Lists()
}
