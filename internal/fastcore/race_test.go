//go:build race

package fastcore

// raceEnabled is true under -race, whose instrumentation changes what the
// decoder allocates: the allocation-size tests skip themselves.
const raceEnabled = true
