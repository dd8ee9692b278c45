package spec

const (
	// MaxBenchRounds is the largest max_rounds.
	MaxBenchRounds = 100000
	// MaxBenchRequests is the most requests one bench takes.
	MaxBenchRequests = 100000
)

// Bench sentinels (A3.6).
var (
	// ErrBenchConfig: a bench setting outside its range or unparseable.
	ErrBenchConfig = NewSentinel("bench_config", "bench setting out of range")
)
