//go:build !race

package scaleout

// raceEnabled is false without -race.
const raceEnabled = false
