// Package fault names the historic bugs that the fast twins can put back
// for the bug zoo (equiv/mutants, docs/adding-an-op.md "Mutants: a switch or
// a wrapper").
//
// A fault is a switch: a bool flag read by a fast twin (internal/fastcore)
// at the one place where a historic bug lived, inside a stateful type or in
// the middle of an algorithm where no wrapper around the production function
// can reach it.
// Bugs that can be reproduced from a production function's inputs and
// outputs are wrappers in equiv/mutants instead and have no flag here.
//
// There is one struct per family, named by the spec's words, in one file
// per family (Radix, Ack, Load, Transfer, Admission, Estimate, DeepGEMM,
// Serving, IndexTopk). Each flag's doc comment cites the spec section
// (docs/spec/<file>.md §N) whose buggy variant it re-introduces.
//
// The zero value of every struct is production: every bug fixed. Only the
// bug zoo (equiv/mutants) and the tests that narrate a bug construct
// non-zero values; the package is internal, so nothing outside kvtwin can.
//
// Naming rule: a family is reached through one entry point per type or op,
// <ProductionName>WithFaults, which takes exactly the production function's
// parameters followed by f fault.<Family> and returns exactly what the
// production function returns (fast.NewTree(cfg) has
// fastcore.NewTreeWithFaults(cfg, f fault.Radix); fast.AdmitRound(lim, in)
// has fastcore.AdmitRoundWithFaults(lim, in, f fault.Admission)). The
// production function is that entry point called with the zero value. The
// entry points live in internal/fastcore, not fast, so they stay off fast's
// API (docs/design/ARCHITECTURE.md "Bug-zoo switches").
package fault
