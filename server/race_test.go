//go:build race

package server_test

// slowdown scales the wall-time bounds of the hostile-input tests under
// -race, which slows every memory access several times.
const slowdown = 10
