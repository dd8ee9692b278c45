//go:build race

package main

// raceEnabled is true under -race: the end-to-end audits that re-execute
// this (then race-instrumented, several times slower) binary as kvtwin and
// as adapters run in `make test-e2e` instead, without -race. The children
// are separate processes, so -race would only slow them; package remote's
// own tests cover the transports' concurrency under -race.
const raceEnabled = true
