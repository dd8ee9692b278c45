// Package fault holds the bug zoo's switches into fast and the table of
// fast's hooks through which the bug zoo reaches them. It names the historic
// bugs that the fast twins can put back for the bug zoo (equiv/mutants,
// docs/adding-an-op.md "Mutants: a switch or a wrapper").
//
// A fault is a switch: a bool flag read by a fast twin at the one place
// where a historic bug lived, inside a stateful type or in the middle of an
// algorithm where no wrapper around the production function can reach it.
// Bugs that can be reproduced from a production function's inputs and
// outputs are wrappers in equiv/mutants instead and have no flag here.
//
// There is one struct per family, named by the spec's words, in one file
// per family (Radix, Ack, Load, Transfer, Admission, Estimate, DeepGEMM,
// Serving, IndexTopK, KVEv). Each flag's doc comment cites the spec section
// (docs/spec/<file>.md §N) whose buggy variant it re-introduces.
//
// A few switches are reach plants instead (issue 30 item 7, marked so in
// their doc comments): plausible bugs, not historic ones, in the places the
// generators used to reach least. No mutant of the zoo sets them; the reach
// tests of equiv/mutants (reach_classes_test.go) do, and require the suite
// to catch each one.
//
// The zero value of every struct is production: every bug fixed. Only the
// bug zoo (equiv/mutants) and the tests that narrate a bug construct
// non-zero values; the package is internal, so nothing outside kvtwin can,
// and internal/repolint lets only fast and equiv/mutants import it.
//
// Naming rule: a family is reached through one hook per type or op, an
// unexported <production>WithFaults of fast beside the production function,
// which takes exactly the production function's parameters followed by
// f fault.<Family> and returns what the production function returns; the
// production function is that hook called with the zero value. Go has no
// friend packages, so fast keeps the hooks unexported (`go doc -all ./fast`
// names no fault) and installs them, once, from its init, in this package's
// table Hooks, one field per production function (fast.NewRadixTree(cfg) has
// Hooks.NewRadixTree(cfg, f fault.Radix); fast.AdmissionRound(lim, in) has
// Hooks.AdmissionRound(lim, in, f fault.Admission)). The bug zoo reads the table
// with Installed (docs/design/ARCHITECTURE.md "Bug-zoo switches").
package fault
