package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// VerifyConfig is `kvtwin serve --verify`: a sample of the op requests is
// re-run on a second implementation after its answer has been sent, and the
// two canonical encodings are compared byte for byte (docs/verify.md). The
// zero Rate turns it off.
type VerifyConfig struct {
	// Rate is the share of op requests verified, in [0, 1]. A request with
	// an X-Request-Id is sampled by a hash of the id alone, so the same id
	// is sampled (or not) on every replica and after every restart.
	Rate float64
	// Workers is how many goroutines re-run samples: verification takes at
	// most this many CPUs from serving.
	Workers int
	// Queue bounds the samples waiting for a worker; a sample that finds it
	// full is dropped and counted, never waited for.
	Queue int
	// QueueBytes bounds the bytes the waiting samples hold together (each
	// holds a copy of its input and of its answer); beyond it, dropped.
	QueueBytes int64
	// CPUShare is the share of one CPU each worker may use, in (0, 1]:
	// after a re-run that took d, a worker rests d·(1/CPUShare − 1) before
	// the next, so verification at any rate takes at most Workers ×
	// CPUShare CPUs from serving, and what it cannot reach is dropped.
	CPUShare float64
	// Timeout bounds one re-run; past it the sample's result is "error".
	Timeout time.Duration
	// Keep is how many divergences GET /v1/verify/divergences keeps, the
	// newest.
	Keep int
	// KeepBytes bounds the kept divergences' fixture lines together; a
	// line over it is counted and logged but not kept.
	KeepBytes int64
	// Dir, when set, receives every divergence as a fixture line in JSON
	// Lines files (verify-NNNNNN.jsonl).
	Dir string
	// FileBytes is the size at which a file in Dir is rotated (a longer
	// line gets a file of its own).
	FileBytes int64
	// Files is how many files Dir keeps, the newest.
	Files int
	// Against is what samples are re-run on: ref, or fast to check cuda
	// answers more cheaply. A request answered by Against itself is not
	// sampled.
	Against catalog.Impl
	// State gives every prefix pool a reference shadow fed the same
	// operations off the request path (prefix.ShadowConfig): each answer,
	// Rate of the scores, and the state digests every DigestInterval are
	// compared. A pool and its shadow reserve twice the pool's budget.
	State bool
	// StateQueue bounds the pool operations waiting for the shadows; a
	// mutation that finds it full loses its pool's shadow.
	StateQueue int
	// StateQueueBytes bounds the bytes those operations hold together
	// (each keeps a copy of its tokens or frames), the same way.
	StateQueueBytes int64
	// DigestInterval is how often, at the most, a pool's digest is compared.
	DigestInterval time.Duration
}

// DefaultVerifyConfig is VerifyConfig with Rate 0 (off) and the bounds
// `kvtwin serve` starts from.
func DefaultVerifyConfig() VerifyConfig {
	return VerifyConfig{Workers: 1, CPUShare: 0.1, Queue: 256, QueueBytes: 64 << 20, Timeout: time.Minute,
		Keep: 1000, KeepBytes: 64 << 20, FileBytes: 64 << 20, Files: 8, Against: catalog.Ref,
		StateQueue: 1 << 16, StateQueueBytes: 64 << 20, DigestInterval: 10 * time.Second}
}

// validate returns the first field out of bounds, as validate does for Config.
func (v VerifyConfig) validate(served catalog.Impl) error {
	const max = 1 << 20
	if math.IsNaN(v.Rate) || v.Rate < 0 || v.Rate > 1 {
		return spec.Reject(ErrBadConfig, "Verify.Rate", v.Rate, "in [0, 1]")
	}
	if v.Rate == 0 {
		if v.State {
			return spec.Reject(ErrBadConfig, "Verify.State", true, "with Verify.Rate > 0: the shadows compare that share of the scores")
		}
		return nil // off: nothing else is read
	}
	if v.State && (v.StateQueue < 1 || v.StateQueue > 1<<24) {
		return spec.Reject(ErrBadConfig, "Verify.StateQueue", v.StateQueue, "in [1, 16777216]")
	}
	if v.State && v.StateQueueBytes < 1 {
		return spec.Reject(ErrBadConfig, "Verify.StateQueueBytes", v.StateQueueBytes, ">= 1")
	}
	if v.State && v.DigestInterval <= 0 {
		return spec.Reject(ErrBadConfig, "Verify.DigestInterval", v.DigestInterval.String(), "> 0")
	}
	switch {
	case v.Workers < 1 || v.Workers > 1024:
		return spec.Reject(ErrBadConfig, "Verify.Workers", v.Workers, "in [1, 1024]")
	case math.IsNaN(v.CPUShare) || v.CPUShare <= 0 || v.CPUShare > 1:
		return spec.Reject(ErrBadConfig, "Verify.CPUShare", v.CPUShare, "in (0, 1]")
	case v.Queue < 1 || v.Queue > max:
		return spec.Reject(ErrBadConfig, "Verify.Queue", v.Queue, fmt.Sprintf("in [1, %d]", max))
	case v.QueueBytes < 1:
		return spec.Reject(ErrBadConfig, "Verify.QueueBytes", v.QueueBytes, ">= 1")
	case v.Timeout <= 0:
		return spec.Reject(ErrBadConfig, "Verify.Timeout", v.Timeout.String(), "> 0")
	case v.Keep < 0 || v.Keep > max:
		return spec.Reject(ErrBadConfig, "Verify.Keep", v.Keep, fmt.Sprintf("in [0, %d]", max))
	case v.KeepBytes < 0:
		return spec.Reject(ErrBadConfig, "Verify.KeepBytes", v.KeepBytes, ">= 0")
	case v.Dir != "" && v.FileBytes < 4096:
		return spec.Reject(ErrBadConfig, "Verify.FileBytes", v.FileBytes, ">= 4096")
	case v.Dir != "" && (v.Files < 1 || v.Files > 1000):
		return spec.Reject(ErrBadConfig, "Verify.Files", v.Files, "in [1, 1000]")
	case v.Against != catalog.Ref && v.Against != catalog.Fast:
		return spec.Reject(ErrBadConfig, "Verify.Against", string(v.Against), "ref or fast")
	case v.Against == served:
		return spec.Reject(ErrBadConfig, "Verify.Against", string(v.Against), fmt.Sprintf("an implementation other than Impl (%s): a twin checked against itself finds nothing", served))
	}
	return nil
}

// Verification results, the result label of kvtwin_verify_total.
const (
	verifyAgree   = "agree"
	verifyDiverge = "diverge"
	verifyDropped = "dropped"
	verifyError   = "error"
)

// verifyJob is one sampled answer waiting to be re-run.
type verifyJob struct {
	entry    catalog.Entry
	impl     catalog.Impl // what answered
	id       string       // X-Request-Id, when the request had a usable one
	in, out  []byte       // copies: the request body and the canonical answer sent
	rejected bool         // out is an error object
}

func (j *verifyJob) bytes() int64 { return int64(len(j.in) + len(j.out)) }

// verifier re-runs sampled answers on its workers and keeps what they find.
// Samples are taken by handlers; results are recorded by workers; all of it
// is safe for concurrent use.
type verifier struct {
	cfg    VerifyConfig
	lim    spec.Limits
	log    *slog.Logger
	salt   uint64 // sampling of requests without an id
	seq    atomic.Uint64
	jobs   chan *verifyJob
	held   atomic.Int64
	closed atomic.Bool

	total   *prometheus.CounterVec
	latency *prometheus.HistogramVec

	shadow *prefix.Shadow // the pools' reference shadows (Verify.State), or nil

	mu     sync.Mutex
	counts map[string]*[4]int64 // op → agree, diverge, dropped, error
	ring   []Divergence         // oldest first
	kept   int64                // bytes of ring's fixture lines
	files  *rotatingFiles
}

// newVerifier returns nil when cfg.Rate is 0: no request is sampled.
func newVerifier(cfg VerifyConfig, lim spec.Limits, log *slog.Logger) (*verifier, error) {
	if cfg.Rate == 0 {
		return nil, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	v := &verifier{cfg: cfg, lim: lim, log: log, salt: binary.LittleEndian.Uint64(b[:]),
		jobs: make(chan *verifyJob, cfg.Queue), counts: map[string]*[4]int64{},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvtwin_verify_total",
			Help: "Sampled op answers re-run on the verifying implementation, by op and result (agree, diverge, dropped, error).",
		}, []string{"op", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kvtwin_verify_duration_seconds",
			Help:    "Time to re-run one sampled op answer and compare it, by op.",
			Buckets: latencyBuckets(),
		}, []string{"op"}),
	}
	if cfg.Dir != "" {
		f, err := openRotatingFiles(cfg.Dir, cfg.FileBytes, cfg.Files)
		if err != nil {
			return nil, spec.Reject(ErrBadConfig, "Verify.Dir", cfg.Dir, "a directory kvtwin can create and write ("+err.Error()+")")
		}
		v.files = f
	}
	return v, nil
}

func (v *verifier) collectors() []prometheus.Collector {
	return []prometheus.Collector{v.total, v.latency}
}

// requestID is the request's X-Request-Id when it is one a log line can
// carry (1 to 128 printable ASCII bytes), else "".
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if len(id) == 0 || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return ""
		}
	}
	return id
}

// sampled decides whether a request is verified: by the hash of its id
// when it has one (the same decision everywhere), else by a counter mixed
// with this process's salt.
func (v *verifier) sampled(id string) bool {
	if v.cfg.Rate >= 1 {
		return true
	}
	var h uint64
	if id != "" {
		h = xxh3.HashString(id)
	} else {
		var b [16]byte // on the stack: every id-less op request passes here
		binary.LittleEndian.PutUint64(b[:], v.salt)
		binary.LittleEndian.PutUint64(b[8:], v.seq.Add(1))
		h = xxh3.Hash(b[:])
	}
	return float64(h>>11)/(1<<53) < v.cfg.Rate
}

// offer queues an answer that was sent, when sampled; it never blocks: a
// full queue or byte budget drops the sample and counts it. in and out are
// copied, so the caller may recycle them.
func (v *verifier) offer(r *http.Request, e catalog.Entry, impl catalog.Impl, in, out []byte, rejected bool) {
	if v == nil || impl == v.cfg.Against {
		return
	}
	id := requestID(r)
	if !v.sampled(id) {
		return
	}
	size := int64(len(in) + len(out))
	if v.closed.Load() {
		v.record(e.Name(), verifyDropped)
		return
	}
	if v.held.Add(size) > v.cfg.QueueBytes {
		v.held.Add(-size)
		v.record(e.Name(), verifyDropped)
		return
	}
	j := &verifyJob{entry: e, impl: impl, id: id, in: bytes.Clone(in), out: bytes.Clone(out), rejected: rejected}
	select {
	case v.jobs <- j:
	default:
		v.held.Add(-size)
		v.record(e.Name(), verifyDropped)
	}
}

// run is the workers' life: they take samples until ctx ends, then count
// what is left in the queue as dropped. The pools' shadow, when on, runs
// beside them.
func (v *verifier) run(ctx context.Context) (wait func()) {
	if v == nil {
		return func() {}
	}
	var wg sync.WaitGroup
	if v.shadow != nil {
		wg.Go(func() { v.shadow.Run(ctx) })
	}
	for range v.cfg.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-v.jobs:
					t0 := time.Now()
					v.check(ctx, j)
					v.held.Add(-j.bytes())
					v.rest(ctx, time.Since(t0))
				}
			}
		})
	}
	return func() {
		wg.Wait()
		v.closed.Store(true)
		for {
			select {
			case j := <-v.jobs:
				v.held.Add(-j.bytes())
				v.record(j.entry.Name(), verifyDropped)
			default:
				if v.files != nil {
					v.files.close()
				}
				return
			}
		}
	}
}

// rest keeps a worker to its CPUShare after a re-run that took d.
func (v *verifier) rest(ctx context.Context, d time.Duration) {
	if v.cfg.CPUShare >= 1 {
		return
	}
	t := time.NewTimer(time.Duration(float64(d) * (1/v.cfg.CPUShare - 1)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// check re-runs one sample on Against and records the comparison.
func (v *verifier) check(ctx context.Context, j *verifyJob) {
	op := j.entry.Name()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	lim := v.lim
	lim.Done = rctx.Done()
	want, panicked, err := runEntry(j.entry, v.cfg.Against, lim, j.in)
	v.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	_, isInput := spec.AsInputError(err)
	switch {
	case panicked != nil || err != nil && !isInput:
		v.log.LogAttrs(ctx, slog.LevelWarn, "verification could not run", slog.String("op", op),
			slog.String("against", string(v.cfg.Against)), slog.String("request_id", j.id),
			slog.Any("err", firstNonNil(panicked, err)))
		v.record(op, verifyError)
	case (err != nil) == j.rejected && bytes.Equal(want, j.out):
		v.record(op, verifyAgree)
	default:
		v.diverged(j, fixtures.Result{Bytes: want, Rejected: err != nil})
	}
}

func firstNonNil(a, b any) any {
	if a != nil {
		return a
	}
	return b
}

// runEntry is e.Run with a panic caught and returned.
func runEntry(e catalog.Entry, impl catalog.Impl, lim spec.Limits, in []byte) (out []byte, panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprintf("panic: %v", p)
		}
	}()
	out, err = e.Run(impl, lim, in)
	return out, nil, err
}

// Divergence is one sampled answer the verifying implementation did not
// give, as GET /v1/verify lists it; its fixture line is in
// /v1/verify/divergences and in Dir.
type Divergence struct {
	Time        time.Time `json:"time"`
	Op          string    `json:"op"`
	Impl        string    `json:"impl"`
	Against     string    `json:"against"`
	RequestID   string    `json:"request_id,omitempty"`
	InputSHA256 string    `json:"input_sha256"`
	line        []byte
}

// divergenceLine is a fixture line (fixtures.Case: the input and the
// verifying implementation's result, so `kvtwin fixtures check` replays
// it) with what the sampled implementation answered beside it, which the
// fixture reader ignores.
type divergenceLine struct {
	fixtures.Case
	Impl        string          `json:"impl"`
	Got         json.RawMessage `json:"got"`
	GotRejected bool            `json:"got_rejected"`
	Diff        string          `json:"diff"`
	RequestID   string          `json:"request_id,omitempty"`
}

// diverged logs, counts and keeps one divergence.
func (v *verifier) diverged(j *verifyJob, want fixtures.Result) {
	op := j.entry.Name()
	sum := sha256.Sum256(j.in)
	d := Divergence{Time: time.Now().UTC(), Op: op, Impl: string(j.impl), Against: string(v.cfg.Against),
		RequestID: j.id, InputSHA256: hex.EncodeToString(sum[:])}
	got := fixtures.Result{Bytes: j.out, Rejected: j.rejected}
	name := "verify/sha256-" + d.InputSHA256[:16]
	c := fixtures.NewCase(op, j.entry.Spec(), name, 0, j.in, want)
	line, err := catalog.Marshal(divergenceLine{Case: c, Impl: d.Impl, Got: jsonOrString(j.out), GotRejected: j.rejected,
		Diff: divergenceDiff(want, got), RequestID: j.id})
	if err != nil { // the canonical results are JSON; an encoding failure is reported, not kept
		line = nil
	}
	d.line = line
	v.log.LogAttrs(context.Background(), slog.LevelWarn, "verification found a divergence",
		slog.String("op", op), slog.String("impl", d.Impl), slog.String("against", d.Against),
		slog.String("request_id", j.id), slog.String("input_sha256", d.InputSHA256))
	v.record(op, verifyDiverge)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keep(d)
	if v.files != nil && line != nil {
		if err := v.files.write(append(line, '\n')); err != nil {
			v.log.Warn("verify: writing a divergence to Verify.Dir failed", "dir", v.cfg.Dir, "err", err)
		}
	}
}

// maxCmpDiffBytes bounds the results go-cmp diffs: its diff of two long
// lists aligns them (quadratic in the worst case), which on a 1 MB output
// took seconds of a verify worker.
const maxCmpDiffBytes = 64 << 10

// divergenceDiff is fixtures.DiffJSON's go-cmp diff for results up to
// maxCmpDiffBytes, else where the bytes first differ, with context.
func divergenceDiff(want, got fixtures.Result) string {
	if len(want.Bytes) <= maxCmpDiffBytes && len(got.Bytes) <= maxCmpDiffBytes {
		return fixtures.DiffJSON(want, got)
	}
	i := 0
	for i < len(want.Bytes) && i < len(got.Bytes) && want.Bytes[i] == got.Bytes[i] {
		i++
	}
	around := func(b []byte) []byte { return b[max(0, i-80):min(len(b), i+80)] }
	return fmt.Sprintf("results of %d (rejected %t) and %d bytes (rejected %t), too long for a structural diff (over %d bytes); they first differ at byte %d:\nwant …%s…\n got …%s…",
		len(want.Bytes), want.Rejected, len(got.Bytes), got.Rejected, maxCmpDiffBytes, i, around(want.Bytes), around(got.Bytes))
}

// jsonOrString is b when it is JSON, else b as a JSON string.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// keep adds d to the ring, dropping the oldest beyond Keep or KeepBytes.
// Called with mu held.
func (v *verifier) keep(d Divergence) {
	if v.cfg.Keep == 0 || int64(len(d.line)) > v.cfg.KeepBytes {
		d.line = nil // counted and logged; its line is too large to hold
	}
	if v.cfg.Keep == 0 {
		return
	}
	v.ring = append(v.ring, d)
	v.kept += int64(len(d.line))
	for len(v.ring) > v.cfg.Keep || v.kept > v.cfg.KeepBytes {
		v.kept -= int64(len(v.ring[0].line))
		v.ring[0] = Divergence{}
		v.ring = v.ring[1:]
	}
	if cap(v.ring) > 2*v.cfg.Keep+16 { // let the dropped head be collected
		v.ring = slices.Clone(v.ring)
	}
}

// record counts one result.
func (v *verifier) record(op, result string) {
	v.total.WithLabelValues(op, result).Inc()
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.counts[op]
	if c == nil {
		c = new([4]int64)
		v.counts[op] = c
	}
	c[slices.Index([]string{verifyAgree, verifyDiverge, verifyDropped, verifyError}, result)]++
}

// VerifyCounts are one op's sampled answers by result.
type VerifyCounts struct {
	Agree   int64 `json:"agree"`
	Diverge int64 `json:"diverge"`
	Dropped int64 `json:"dropped"`
	Error   int64 `json:"error"`
}

// VerifySummary is GET /v1/verify's answer.
type VerifySummary struct {
	Rate    float64                 `json:"rate"`
	Against string                  `json:"against"`
	Ops     map[string]VerifyCounts `json:"ops"`
	Total   VerifyCounts            `json:"total"`
	// Last are the newest divergences kept, newest first, at most 20.
	Last []Divergence `json:"last"`
}

// summary is the state GET /v1/verify reports.
func (v *verifier) summary() VerifySummary {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := VerifySummary{Rate: v.cfg.Rate, Against: string(v.cfg.Against), Ops: map[string]VerifyCounts{}, Last: []Divergence{}}
	for op, c := range v.counts {
		vc := VerifyCounts{c[0], c[1], c[2], c[3]}
		s.Ops[op] = vc
		s.Total.Agree += vc.Agree
		s.Total.Diverge += vc.Diverge
		s.Total.Dropped += vc.Dropped
		s.Total.Error += vc.Error
	}
	for i := len(v.ring) - 1; i >= 0 && len(s.Last) < 20; i-- {
		s.Last = append(s.Last, v.ring[i])
	}
	return s
}

// lines are the kept divergences' fixture lines, oldest first.
func (v *verifier) lines() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([][]byte, 0, len(v.ring))
	for _, d := range v.ring {
		if d.line != nil {
			out = append(out, d.line)
		}
	}
	return out
}

// handleVerify serves GET /v1/verify: the counts per op and the newest
// divergences. Without --verify it says so with 404.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	if s.verify == nil {
		s.writeError(w, r, verifyOff())
		return
	}
	body, err := json.Marshal(s.verify.summary())
	if err != nil {
		s.writeError(w, r, &apiError{status: http.StatusInternalServerError, message: "encoding the verification summary: " + err.Error()})
		return
	}
	s.writeAnswer(w, r, http.StatusOK, jsonContent, append(body, '\n'))
}

// handleVerifyDivergences serves GET /v1/verify/divergences: the kept
// divergences as fixture lines (JSON Lines), oldest first, which `kvtwin
// fixtures check` replays.
func (s *Server) handleVerifyDivergences(w http.ResponseWriter, r *http.Request) {
	if s.verify == nil {
		s.writeError(w, r, verifyOff())
		return
	}
	var buf bytes.Buffer
	for _, l := range s.verify.lines() {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	s.writeAnswer(w, r, http.StatusOK, "application/jsonl", buf.Bytes())
}

// enableShadows gives the pools reference shadows (Verify.State).
func (v *verifier) enableShadows(pools *prefix.Registry) error {
	if v == nil || !v.cfg.State {
		return nil
	}
	newRef, err := catalog.RadixTree(catalog.Ref)
	if err != nil {
		return err
	}
	v.shadow, err = pools.EnableShadow(prefix.ShadowConfig{NewTree: newRef, Queue: v.cfg.StateQueue, QueueBytes: v.cfg.StateQueueBytes,
		ScoreRate: v.cfg.Rate, DigestInterval: v.cfg.DigestInterval})
	return err
}

// DivergedPools are the pools whose reference shadow disagreed, or was
// lost, as /readyz lists them.
type DivergedPools struct {
	Diverged []string `json:"diverged"`
	Lost     []string `json:"lost"`
	// Events is the event-fed index's shadow, when there is an index.
	Events *prefix.ShadowStatus `json:"events,omitempty"`
}

// shadowReport is /readyz's detail of the shadows, nil without them.
func (s *Server) shadowReport() *DivergedPools {
	if s.verify == nil || s.verify.shadow == nil {
		return nil
	}
	d := &DivergedPools{Diverged: []string{}, Lost: []string{}}
	if s.events != nil && s.events.shadow != nil {
		st := s.events.shadow.Status()
		d.Events = &st
	}
	for _, n := range s.pools.List() {
		switch st := n.Pool.ShadowStatus(); {
		case st == nil:
		case st.State == prefix.ShadowDiverged:
			d.Diverged = append(d.Diverged, n.Name)
		case st.State == prefix.ShadowLost:
			d.Lost = append(d.Lost, n.Name)
		}
	}
	return d
}

// shadowGauge is a shadow's state as the metrics give it: 1 diverged, 0
// agreeing, -1 lost.
func shadowGauge(st prefix.ShadowStatus) float64 {
	switch st.State {
	case prefix.ShadowDiverged:
		return 1
	case prefix.ShadowLost:
		return -1
	}
	return 0
}

func verifyOff() *apiError {
	return &apiError{status: http.StatusNotFound, message: "verification is off: start the server with --verify RATE (docs/verify.md)"}
}

// rotatingFiles is Verify.Dir: JSON Lines files verify-NNNNNN.jsonl, a new
// one when the current would pass maxBytes (a line longer than that gets a
// file of its own), the newest keep kept. Each process starts a new file
// after the highest number it finds. A hand-written rotation, not
// lumberjack: its cleanup goroutine outlives Close, and its sizes are whole
// megabytes (docs/decisions.md).
type rotatingFiles struct {
	dir      string
	maxBytes int64
	keep     int
	n        int      // the current file's number
	f        *os.File // nil until the first write
	size     int64
}

func openRotatingFiles(dir string, maxBytes int64, keep int) (*rotatingFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	nums, err := verifyFileNumbers(dir)
	if err != nil {
		return nil, err
	}
	rf := &rotatingFiles{dir: dir, maxBytes: maxBytes, keep: keep}
	if len(nums) > 0 {
		rf.n = nums[len(nums)-1]
	}
	return rf, nil
}

// verifyFileNumbers are the numbers of dir's verify-NNNNNN.jsonl files, ascending.
func verifyFileNumbers(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "verify-%06d.jsonl", &n); err == nil && e.Name() == verifyFileName(n) {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

func verifyFileName(n int) string { return fmt.Sprintf("verify-%06d.jsonl", n) }

// write appends line, rotating first when it would not fit.
func (rf *rotatingFiles) write(line []byte) error {
	if rf.f == nil || rf.size > 0 && rf.size+int64(len(line)) > rf.maxBytes {
		if err := rf.rotate(); err != nil {
			return err
		}
	}
	n, err := rf.f.Write(line)
	rf.size += int64(n)
	return err
}

// rotate closes the current file, starts the next and removes the oldest
// beyond keep.
func (rf *rotatingFiles) rotate() error {
	rf.close()
	rf.n++
	f, err := os.OpenFile(filepath.Join(rf.dir, verifyFileName(rf.n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	rf.f, rf.size = f, 0
	nums, err := verifyFileNumbers(rf.dir)
	if err != nil {
		return err
	}
	for len(nums) > rf.keep {
		if err := os.Remove(filepath.Join(rf.dir, verifyFileName(nums[0]))); err != nil {
			return err
		}
		nums = nums[1:]
	}
	return nil
}

func (rf *rotatingFiles) close() {
	if rf.f != nil {
		_ = rf.f.Close()
		rf.f = nil
	}
}
