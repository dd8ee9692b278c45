//go:build !race

package server_test

// slowdown is 1 without -race.
const slowdown = 1
