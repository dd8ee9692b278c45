//go:build !race

package main

// raceEnabled is false without -race.
const raceEnabled = false
