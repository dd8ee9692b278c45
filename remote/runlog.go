package remote

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// Bounds of what an exec adapter's processes leave behind
// (docs/adapters.md "stderr").
const (
	// RingBytes is how much of each process's stderr is kept: the last
	// 64 KiB; older bytes are dropped as new ones come, so a flood costs
	// the caller this much memory and nothing on its terminal.
	RingBytes = 64 << 10
	// KeptRuns bounds the processes a Log keeps: the first KeptRuns/2 (how
	// the adapter started failing) and the last KeptRuns/2 (how it ended).
	KeptRuns = 8
	// MaxSummaryLines bounds the summary lines an Impl writes to
	// Options.Stderr; two more at most say that the rest are in the report.
	MaxSummaryLines = 16
)

// Run is one exec adapter process as the report keeps it.
type Run struct {
	// Run numbers the processes of one Impl from 1 (2 is the first
	// restart).
	Run int `json:"run"`
	// PID is the process id.
	PID int `json:"pid"`
	// Ended says how the process ended: "exited (exit status 0) after
	// stdin closed", or "killed: " and the failure that ended it.
	Ended string `json:"ended"`
	// Kind is the failure that ended the process (empty when it exited
	// because Close asked it to).
	Kind Kind `json:"kind,omitempty"`
	// Unattributed marks a failure while no call was in flight (a reply
	// nobody asked for, an exit between calls): no case carries it, so the
	// audit fails on the adapter itself.
	Unattributed bool `json:"unattributed,omitempty"`
	// Millis is how long the process ran.
	Millis int64 `json:"millis"`
	// StderrBytes and StderrLines count everything the process wrote to
	// stderr (a last line without a newline counts).
	StderrBytes int64 `json:"stderr_bytes"`
	StderrLines int64 `json:"stderr_lines"`
	// Stderr is the last RingBytes of it (as a JSON string: invalid UTF-8
	// shows as U+FFFD).
	Stderr string `json:"stderr"`
}

// Log is what an Impl's processes left behind, bounded: KeptRuns
// processes with their stderr rings, however many restarts there were.
type Log struct {
	// Runs is how many processes were started (1 + restarts).
	Runs int `json:"runs"`
	// Kept are the first and the last KeptRuns/2 of them that have ended,
	// in order.
	Kept []Run `json:"kept,omitempty"`
	// Omitted is how many ended processes between those are not kept.
	Omitted int `json:"omitted,omitempty"`
	// Unattributed counts the failures outside every call, which no case
	// carries: processes that failed while no call was in flight, and
	// second replies to answered calls (ignored; the stream stays whole).
	// FirstUnattributed says what the first of them was.
	Unattributed      int    `json:"unattributed,omitempty"`
	FirstUnattributed string `json:"first_unattributed,omitempty"`
}

// ring keeps the last len(buf) bytes written to it and counts them all.
// Write never blocks on anything but a short mutex, so the goroutine that
// drains an adapter's stderr into it never stalls the adapter. Safe for
// concurrent use.
type ring struct {
	mu    sync.Mutex
	size  int
	buf   []byte // allocated on the first write
	w     int    // next write position
	full  bool   // buf has wrapped
	total int64
	lines int64
	last  byte
}

func newRing(size int) *ring { return &ring{size: size} }

func (r *ring) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total += int64(n)
	r.lines += int64(bytes.Count(p, []byte{'\n'}))
	r.last = p[n-1]
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	if len(p) > r.size {
		p = p[len(p)-r.size:]
	}
	k := copy(r.buf[r.w:], p)
	copy(r.buf, p[k:])
	if r.w+len(p) >= r.size {
		r.full = true
	}
	r.w = (r.w + len(p)) % r.size
	return n, nil
}

// snapshot is the kept bytes in order, and the byte and line counts.
func (r *ring) snapshot() (kept []byte, total, lines int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines = r.lines
	if r.total > 0 && r.last != '\n' {
		lines++
	}
	if !r.full {
		return bytes.Clone(r.buf[:r.w]), r.total, lines
	}
	kept = make([]byte, 0, r.size)
	kept = append(kept, r.buf[r.w:]...)
	return append(kept, r.buf[:r.w]...), r.total, lines
}

// lastLineMax bounds the last stderr line a summary or a reason quotes.
const lastLineMax = 160

// lastLine is the last non-empty line of b, at most its last lastLineMax
// bytes (where an error usually says what it is).
func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\r\n\t ")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > lastLineMax {
		b = b[len(b)-lastLineMax:]
	}
	return b
}

// runLog keeps an Impl's Log and writes its summary lines. Safe for
// concurrent use: processes end on their own goroutines.
type runLog struct {
	target string
	w      io.Writer
	mu     sync.Mutex
	log    Log
	last   []Run // the last KeptRuns/2 ended after Kept filled
	lines  int   // summary lines due so far (written or not)
}

func newRunLog(target string, w io.Writer) *runLog {
	return &runLog{target: truncate(target, 200), w: w}
}

// started counts a process start and returns its run number.
func (l *runLog) started() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log.Runs++
	return l.log.Runs
}

// ended records a process's end and writes its summary line.
func (l *runLog) ended(r Run, elapsed time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Unattributed {
		l.outsideLocked(fmt.Sprintf("process %d: %s", r.Run, r.Ended))
	}
	if len(l.log.Kept) < KeptRuns/2 {
		l.log.Kept = append(l.log.Kept, r)
	} else {
		l.last = append(l.last, r)
		if len(l.last) > KeptRuns/2 {
			l.last = l.last[1:]
			l.log.Omitted++
		}
	}
	l.summarize(r, elapsed)
}

// outside records a failure outside every call.
func (l *runLog) outside(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outsideLocked(what)
}

func (l *runLog) outsideLocked(what string) {
	l.log.Unattributed++
	if l.log.FirstUnattributed == "" {
		l.log.FirstUnattributed = truncate(what, 400)
	}
}

// summarize writes r's summary line while there are fewer than
// MaxSummaryLines, then one line saying the rest are in the report.
func (l *runLog) summarize(r Run, elapsed time.Duration) {
	if l.w == nil {
		return
	}
	l.lines++
	switch {
	case l.lines <= MaxSummaryLines:
		stderr := "stderr empty"
		if r.StderrBytes > 0 {
			stderr = fmt.Sprintf("stderr %s in %d lines, the last %q", byteCount(r.StderrBytes), r.StderrLines, lastLine([]byte(r.Stderr)))
		}
		fmt.Fprintf(l.w, "adapter %s: process %d (pid %d), %s: %s; %s\n",
			l.target, r.Run, r.PID, elapsed.Round(time.Millisecond), truncate(r.Ended, 300), stderr)
	case l.lines == MaxSummaryLines+1:
		fmt.Fprintf(l.w, "adapter %s: more processes ended; they are summarized in the report (--json, --html)\n", l.target)
	}
}

// closed writes the total when summary lines were left out.
func (l *runLog) closed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil && l.lines > MaxSummaryLines {
		fmt.Fprintf(l.w, "adapter %s: %d processes in all, %d of them not summarized here\n", l.target, l.log.Runs, l.lines-MaxSummaryLines)
	}
}

// snapshot is the Log so far.
func (l *runLog) snapshot() Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	out.Kept = append(append([]Run(nil), l.log.Kept...), l.last...)
	return out
}

// byteCount renders n bytes in binary units.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
