//go:build !race

package equiv_test

// raceEnabled is false without -race.
const raceEnabled = false
