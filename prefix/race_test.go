//go:build race

package prefix_test

// raceEnabled is true under -race, where the heap measurements skip: the
// detector's shadow memory and slowdown say nothing of what a pool holds
// (make test-full runs them without it).
const raceEnabled = true
