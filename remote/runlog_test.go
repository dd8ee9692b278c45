package remote

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRingKeepsTheLastBytesAndCountsEverything: the ring holds the last
// size bytes in order across wraps and writes larger than itself, and
// counts every byte and line (a last line without a newline counts).
func TestRingKeepsTheLastBytesAndCountsEverything(t *testing.T) {
	r := newRing(8)
	var all []byte
	for _, w := range []string{"ab", "c\nd", "", "efghij\n", "0123456789abcdefXYZ", "q"} {
		_, _ = r.Write([]byte(w))
		all = append(all, w...)
		kept, total, lines := r.snapshot()
		want := all[max(0, len(all)-8):]
		wantLines := int64(bytes.Count(all, []byte("\n")))
		if len(all) > 0 && all[len(all)-1] != '\n' {
			wantLines++
		}
		if !bytes.Equal(kept, want) || total != int64(len(all)) || lines != wantLines {
			t.Fatalf("after %q: kept %q total %d lines %d, want %q %d %d", w, kept, total, lines, want, len(all), wantLines)
		}
	}
	if got := lastLine([]byte("first\nsecond line\n\n")); string(got) != "second line" {
		t.Errorf("lastLine = %q", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the summary lines' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExecStderrFloodStaysInTheRing: an adapter that writes megabytes to
// stderr while it answers costs the caller one summary line and a 64 KiB
// ring holding the flood's end, whose size and line count are reported
// exactly.
func TestExecStderrFloodStaysInTheRing(t *testing.T) {
	const n = 1 << 20
	var term syncBuffer
	r, err := Open("exec:"+roleCommand(), Options{Stderr: &term})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Run("flood", []byte(fmt.Sprintf(`{"bytes":%d}`, n))); err != nil || string(res.Bytes) != "{}" {
		t.Fatalf("flood call: %s, %v", res.Bytes, err)
	}
	_ = r.Close()
	log := r.Log()
	if log.Runs != 1 || len(log.Kept) != 1 {
		t.Fatalf("log %+v, want one process", log)
	}
	run := log.Kept[0]
	const lineLen = len("stderr line 000000000\n")
	lines := (n + lineLen - 1) / lineLen
	wantBytes := int64(lines*lineLen + len("flood end\n"))
	if run.StderrBytes != wantBytes || run.StderrLines != int64(lines+1) || len(run.Stderr) != RingBytes || !strings.HasSuffix(run.Stderr, fmt.Sprintf("stderr line %09d\nflood end\n", lines-1)) {
		t.Errorf("run: %d bytes, %d lines, ring of %d ending %q; want %d bytes, %d lines, a %d-byte ring ending at the flood's end",
			run.StderrBytes, run.StderrLines, len(run.Stderr), run.Stderr[max(0, len(run.Stderr)-40):], wantBytes, lines+1, RingBytes)
	}
	out := term.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "process 1") || !strings.Contains(out, "exited (exit status 0) after stdin closed") ||
		!strings.Contains(out, "stderr 1.0 MiB in ") || !strings.Contains(out, `the last "flood end"`) {
		t.Errorf("terminal got %d bytes: %q; want one summary line", len(out), out)
	}
}

// TestSummaryLinesAndKeptRunsAreBounded: an adapter restarted 20 times
// (one that crashes on every call) leaves at most MaxSummaryLines+2 lines
// on the terminal and KeptRuns processes in the log, the first and the
// last, and counts the processes that failed with no call in flight.
func TestSummaryLinesAndKeptRunsAreBounded(t *testing.T) {
	var term syncBuffer
	l := newRunLog("exec:crashy", &term)
	for range 20 {
		n := l.started()
		l.ended(Run{Run: n, Ended: "adapter exited (exit status 3)", Kind: KindExited, Unattributed: n%5 == 0}, time.Millisecond)
	}
	l.closed()
	log := l.snapshot()
	if log.Runs != 20 || len(log.Kept) != KeptRuns || log.Omitted != 20-KeptRuns || log.Kept[0].Run != 1 || log.Kept[KeptRuns-1].Run != 20 ||
		log.Kept[KeptRuns/2].Run != 20-KeptRuns/2+1 {
		t.Errorf("log: %d runs, kept %+v, omitted %d", log.Runs, log.Kept, log.Omitted)
	}
	if log.Unattributed != 4 || log.FirstUnattributed != "process 5: adapter exited (exit status 3)" {
		t.Errorf("unattributed %d, first %q", log.Unattributed, log.FirstUnattributed)
	}
	if n := strings.Count(term.String(), "\n"); n != MaxSummaryLines+2 || !strings.Contains(term.String(), "20 processes in all, 4 of them not summarized here") {
		t.Errorf("%d summary lines, want %d:\n%s", n, MaxSummaryLines+2, term.String())
	}
}

// TestExecCloseIsBoundedWhenAChildOfTheAdapterHoldsItsPipes: an adapter
// started through a shell that left a child holding its stdout and stderr
// (here a sleep) is killed on a timeout and closed within drainGrace, not
// when the child lets go of the pipes.
func TestExecCloseIsBoundedWhenAChildOfTheAdapterHoldsItsPipes(t *testing.T) {
	r, err := Open(fmt.Sprintf("exec:sh -c 'sleep 10 & exec %s'", roleCommand()), Options{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := r.Run("silent", []byte(`{}`)); KindOf(err) != KindTimeout {
		t.Errorf("silent: %v, want a timeout", err)
	}
	_ = r.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout and Close took %s while the child held the pipes, want about 300ms + %s", d, drainGrace)
	}
	if log := r.Log(); len(log.Kept) != 1 || log.Kept[0].Kind != KindTimeout {
		t.Errorf("log %+v, want the killed process", log)
	}
}
