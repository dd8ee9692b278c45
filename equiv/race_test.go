//go:build race

package equiv_test

// raceEnabled is true under -race, whose allocation and time overheads the
// hostile harness's bounds are not stated for.
const raceEnabled = true
