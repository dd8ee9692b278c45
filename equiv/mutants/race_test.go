//go:build race

package mutants

// raceEnabled is true under -race, which slows every generated case
// several times over: the reach tests then draw fewer of them (every
// plant is also killed by a table or golden case).
const raceEnabled = true
