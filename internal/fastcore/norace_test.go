//go:build !race

package fastcore

// raceEnabled is false without -race.
const raceEnabled = false
