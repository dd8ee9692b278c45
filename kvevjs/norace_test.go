//go:build !race

package kvevjs

// raceEnabled is false without -race.
const raceEnabled = false
