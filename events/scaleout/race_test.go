//go:build race

package scaleout

// raceEnabled is true under -race, where the simulation runs fewer seeds
// and the throughput test fewer events (the detector slows nats-server,
// which runs in-process, several times).
const raceEnabled = true
