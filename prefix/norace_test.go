//go:build !race

package prefix_test

// raceEnabled is false without -race.
const raceEnabled = false
