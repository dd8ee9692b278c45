package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// This file samples the server's resident set size and judges its trend.

// rssSample is one reading of the child's VmRSS.
type rssSample struct {
	at    time.Duration // since the run started
	bytes int64
}

// rssSampler reads /proc/PID/status once a second; safe for concurrent use.
type rssSampler struct {
	pid     int
	mu      sync.Mutex
	samples []rssSample
	readErr error // the first failed read, reported when no sample was taken
}

// readRSS is the VmRSS of pid in bytes (Linux /proc).
func readRSS(pid int) (int64, error) {
	return procStatusBytes(pid, "VmRSS")
}

// procStatusBytes reads field ("VmRSS", or "VmHWM" for the peak) of pid's
// /proc/PID/status, in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read %s of pid %d: %w", field, pid, err)
	}
	return parseProcStatus(b, field)
}

// parseProcStatus reads the "<field>:   1234 kB" line of a /proc/PID/status.
func parseProcStatus(status []byte, field string) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(field+":"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("%s line %q: want <n> kB", field, bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s line %q: %w", field, bytes.TrimSpace(line), err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no %s line in /proc status (a kernel thread, or not Linux)", field)
}

// run samples every second until ctx ends. over is called, once, with the
// first sample above limit, so the caller can stop a run that is eating the
// machine rather than let the OOM killer pick a process.
func (s *rssSampler) run(ctx context.Context, start time.Time, limit int64, over func(rssSample)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	warned := false
	for {
		b, err := readRSS(s.pid)
		s.mu.Lock()
		if err != nil && s.readErr == nil {
			s.readErr = err
		}
		var smp rssSample
		if err == nil {
			smp = rssSample{at: time.Since(start), bytes: b}
			s.samples = append(s.samples, smp)
		}
		s.mu.Unlock()
		if err == nil && b > limit && !warned {
			warned = true
			over(smp)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// snapshot copies the samples taken so far.
func (s *rssSampler) snapshot() ([]rssSample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples), s.readErr
}

// minTrendSamples is the fewest samples the growth check judges: with fewer,
// a third is two or so readings and warm-up alone looks like growth.
const minTrendSamples = 9

// minGrowthBytes is the smallest rise the growth check flags: a Go heap of a
// few tens of MiB moves by that much with one GC cycle's timing.
const minGrowthBytes = 32 << 20

// rssTrend compares the end of a run with its start. The baseline is the
// maximum of the first third, which holds the warm-up (pools filling, the
// heap reaching its GC goal, first-touch of every code path); the end is
// the median of the last third, so one transient spike does not count but a
// sustained rise, which is what a leak looks like, does.
type rssTrend struct {
	Checked         bool    `json:"checked"`
	FirstThirdMax   int64   `json:"first_third_max_bytes"`
	LastThirdMedian int64   `json:"last_third_median_bytes"`
	GrowthPct       float64 `json:"growth_pct"`
	Exceeded        bool    `json:"exceeded"`
}

// judgeTrend applies maxGrowthPct to the samples in time order.
func judgeTrend(samples []int64, maxGrowthPct float64) rssTrend {
	n := len(samples)
	if n < minTrendSamples {
		return rssTrend{}
	}
	third := n / 3
	first := slices.Max(samples[:third])
	last := slices.Clone(samples[n-third:])
	slices.Sort(last)
	median := last[len(last)/2]
	t := rssTrend{Checked: true, FirstThirdMax: first, LastThirdMedian: median}
	if first > 0 {
		t.GrowthPct = 100 * float64(median-first) / float64(first)
	}
	t.Exceeded = t.GrowthPct > maxGrowthPct && median-first > minGrowthBytes
	return t
}
