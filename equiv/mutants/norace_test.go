//go:build !race

package mutants

// raceEnabled is false without -race.
const raceEnabled = false
