package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/spec"
)

// `kvtwin soak` (issue 15, deliverable 7; issue 27, part 8): a bounded
// load and soak run of `kvtwin serve` over loopback. It starts the server
// as a child process, drives a mix of well-behaved and hostile clients for
// --duration, feeds the server's event-fed index from real KV-event
// publishers (hostile messages mixed in) and runs an adapter audit beside
// them, samples the child's RSS every second and fails on any 5xx, a
// crash, memory past its bounds, transport errors on the well-behaved
// traffic, wrong answers (scores of the event-fed index included), a 429
// storm (most well-behaved requests refused), an index that stopped
// applying, a publisher that could not run, a failed audit run, compute
// slots still held after the clients stopped, or an unclean drain.
//
// The files soak*.go hold its parts: soak_child.go the child process,
// soak_load.go and soak_preflight.go the request mix, soak_slow.go the slow
// clients, soak_events*.go the KV-event publishers (soak_publisher.go
// drives the script) and what the server made of them, soak_score.go the
// score checks, soak_audit.go the adapter audit, soak_rss.go the memory
// samples, soak_stats.go the counters and soak_report.go the verdict and
// its rendering.

// soakConfig is one run's settings, from the flags.
type soakConfig struct {
	bin             string
	duration        time.Duration
	clients         int
	maxRSS          int64
	maxRSSGrowthPct float64
	maxTransportPct float64
	max429Pct       float64
	hostile         hostileSet
	hostileFraction float64
	slowClients     int
	slowInterval    time.Duration
	slowReadRate    int
	slowWriteRate   int
	deepBytes       int
	requestTimeout  time.Duration
	backoff429      time.Duration
	progressEvery   time.Duration // 0: no progress lines
	seed            uint64
	serveArgs       []string
	python          string // the interpreter of the publisher and the Python adapter
	events          eventsConfig
	audit           auditConfig
}

// soakFlags are the flags as typed, before soakConfig checks them.
type soakFlags struct {
	cfg                      soakConfig
	maxRSS, deep, hostile    string
	noDeep, progress, asJSON bool
}

func newSoakCmd() *cobra.Command {
	var fl soakFlags
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Load and soak `kvtwin serve` over 127.0.0.1 (a child process) with well-behaved and hostile clients; fail on 5xx, crashes, 429 storms or memory growth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fl.config()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var progress io.Writer
			if fl.progress {
				progress = cmd.ErrOrStderr()
			}
			rep, err := runSoak(ctx, cfg, progress)
			if err != nil {
				return err
			}
			if err := rep.write(cmd.OutOrStdout(), fl.asJSON); err != nil {
				return fmt.Errorf("soak: write the report: %w", err)
			}
			return rep.verdict()
		},
	}
	exe, _ := os.Executable() // "" if unknown: config then asks for --bin
	f := cmd.Flags()
	f.StringVar(&fl.cfg.bin, "bin", exe, "the kvtwin binary to run as the server")
	f.DurationVar(&fl.cfg.duration, "duration", time.Minute, "how long the load runs")
	f.IntVar(&fl.cfg.clients, "clients", 8, "concurrent well-behaved workers")
	f.StringVar(&fl.maxRSS, "max-rss", "1GiB", "fail when the server's RSS exceeds this (bytes or <n>{KiB,MiB,GiB}); the run stops there")
	f.Float64Var(&fl.cfg.maxRSSGrowthPct, "max-rss-growth", 50, "fail when the median RSS of the last third of the run exceeds the max of the first third by more than this many percent (and by 32 MiB)")
	f.Float64Var(&fl.cfg.maxTransportPct, "max-transport-errors", 1, "fail when more than this percentage of well-behaved requests get no response")
	f.Float64Var(&fl.cfg.max429Pct, "max-429", 50, "fail when more than this percentage of well-behaved requests get 429: the server is refusing most of its real load (a slot-holding slow client does that)")
	f.StringVar(&fl.hostile, "hostile", allHostile, "hostile clients to mix in (comma-separated), or none")
	f.BoolVar(&fl.noDeep, "no-deep", false, "drop deep from --hostile (for a server that does not survive deep nesting yet)")
	f.Float64Var(&fl.cfg.hostileFraction, "hostile-fraction", 0.02, "fraction of worker requests that are hostile bodies (deep, huge, truncated, unknown)")
	f.IntVar(&fl.cfg.slowClients, "slow-clients", 1, "slow clients of each kind (writer, reader) alive at once (0: none)")
	f.DurationVar(&fl.cfg.slowInterval, "slow-interval", 5*time.Second, "at most one new slow client of each kind per interval")
	f.IntVar(&fl.cfg.slowReadRate, "slow-read-rate", 1024, "bytes per second a slow reader reads")
	f.IntVar(&fl.cfg.slowWriteRate, "slow-write-rate", 4, "bytes per second a slow writer sends")
	f.StringVar(&fl.deep, "deep-bytes", "2MiB", "size of a deep-nesting body, half '[' and half ']'")
	f.DurationVar(&fl.cfg.requestTimeout, "request-timeout", 30*time.Second, "client timeout of one well-behaved or hostile-body request")
	f.DurationVar(&fl.cfg.backoff429, "backoff-429", 10*time.Millisecond, "after a 429 a worker waits a random time up to this before its next request (0: retry at once)")
	f.BoolVar(&fl.progress, "progress", false, "print a progress line to stderr every --progress-every")
	f.DurationVar(&fl.cfg.progressEvery, "progress-every", 5*time.Second, "progress line interval")
	f.Uint64Var(&fl.cfg.seed, "seed", 1, "seed of the request mix")
	f.StringArrayVar(&fl.cfg.serveArgs, "serve-arg", nil, "extra flag for the child kvtwin serve (repeatable), e.g. --serve-arg=--max-concurrent=16")
	f.BoolVar(&fl.asJSON, "json", false, "write the final report as JSON")
	fl.eventFlags(cmd)
	return cmd
}

// config checks the flags and resolves sizes and sets.
func (fl *soakFlags) config() (soakConfig, error) {
	cfg := fl.cfg
	var err error
	if cfg.maxRSS, err = spec.ByteSize(fl.maxRSS).Bytes("--max-rss"); err != nil {
		return cfg, err
	}
	deep, err := spec.ByteSize(fl.deep).Bytes("--deep-bytes")
	if err != nil {
		return cfg, err
	}
	cfg.deepBytes = int(min(deep, 1<<30))
	if cfg.hostile, err = parseHostileSet(fl.hostile); err != nil {
		return cfg, err
	}
	if fl.noDeep {
		cfg.hostile &^= 1 << hostileDeep
	}
	if !fl.progress {
		cfg.progressEvery = 0
	}
	if err := cfg.resolveFiles(); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// eventFlags adds the flags of the KV-event publishers and the adapter audit.
func (fl *soakFlags) eventFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	ev, au := &fl.cfg.events, &fl.cfg.audit
	f.StringVar(&fl.cfg.python, "python", defaultPython, "the Python with python3-zmq and python3-msgpack that runs the publishers and the Python adapter")
	f.BoolVar(&ev.on, "events", true, "feed the server's event-fed index from three real KV-event publishers (churn, pinned prompts, hostile) and check its scores")
	f.StringVar(&ev.script, "publisher-script", "", "the publisher script (default: "+publisherScript+" above the working directory or the binary)")
	f.IntVar(&ev.rate, "events-rate", 200, "batches per second of the churning publisher")
	f.IntVar(&ev.ranks, "events-ranks", 4, "DP ranks (engines) of the churning publisher")
	f.DurationVar(&ev.hostileEvery, "events-hostile-every", 500*time.Millisecond, "one hostile message (malformed frames, wrong frame counts, garbage, deep nesting, huge event counts, seq jumps, another source's engine) per interval (0: none)")
	f.IntVar(&ev.hugeEvents, "events-huge-events", 1<<21, "events of a huge-count hostile message (three bytes each; within the subscriber's 64 MiB frame cap)")
	f.DurationVar(&ev.stall, "events-stall", 15*time.Second, "fail when a well-behaved source applies no batch for this long while its publisher sends")
	f.BoolVar(&au.on, "audit", true, "run `kvtwin audit --impl exec:…` of an adapter again and again beside the load; every run must pass")
	f.StringVar(&au.impl, "audit-impl", "", "the adapter audited (default: exec:PYTHON "+auditExample+", found like --publisher-script)")
	f.IntVar(&au.cases, "audit-cases", 100, "generated cases per op of each audit run")
	f.DurationVar(&au.interval, "audit-interval", 5*time.Second, "a new audit run starts at most this often")
	f.DurationVar(&au.timeout, "audit-timeout", 2*time.Minute, "fail an audit run that takes longer")
}

// resolveFiles finds the publisher script and the audit's adapter when
// their flags were left empty.
func (cfg *soakConfig) resolveFiles() error {
	cfg.events.python = cfg.python
	if cfg.events.on && cfg.events.script == "" {
		p, err := findRepoFile(publisherScript, cfg.bin)
		if err != nil {
			return fmt.Errorf("--publisher-script: %w (or --events=false)", err)
		}
		cfg.events.script = p
	}
	if cfg.audit.on && cfg.audit.impl == "" {
		p, err := findRepoFile(auditExample, cfg.bin)
		if err != nil {
			return fmt.Errorf("--audit-impl: %w (or --audit=false)", err)
		}
		cfg.audit.impl = "exec:" + shellQuote(cfg.python) + " " + shellQuote(p)
	}
	return nil
}

// validate rejects settings that would make the run meaningless or unbounded.
func (cfg soakConfig) validate() error {
	switch {
	case cfg.bin == "":
		return errors.New("--bin: the kvtwin binary's path is unknown; name it")
	case cfg.duration <= 0:
		return fmt.Errorf("--duration %s: want > 0", cfg.duration)
	case cfg.clients < 1 || cfg.clients > 1024:
		return fmt.Errorf("--clients %d: want 1 to 1024", cfg.clients)
	case cfg.maxRSSGrowthPct <= 0 || cfg.maxTransportPct < 0 || cfg.max429Pct < 0:
		return errors.New("--max-rss-growth must be > 0, and --max-transport-errors and --max-429 >= 0")
	case cfg.hostileFraction < 0 || cfg.hostileFraction > 1:
		return fmt.Errorf("--hostile-fraction %g: want 0 to 1", cfg.hostileFraction)
	case cfg.slowClients < 0 || cfg.slowClients > 64 || cfg.slowInterval <= 0:
		return errors.New("--slow-clients must be 0 to 64 and --slow-interval > 0")
	case cfg.slowReadRate < 1 || cfg.slowWriteRate < 1 || cfg.slowWriteRate > 1000:
		return errors.New("--slow-read-rate must be >= 1 and --slow-write-rate 1 to 1000")
	case cfg.requestTimeout <= 0 || cfg.progressEvery < 0 || cfg.backoff429 < 0:
		return errors.New("--request-timeout must be > 0, and --progress-every and --backoff-429 >= 0")
	}
	if err := cfg.events.validate(); err != nil {
		return err
	}
	if err := cfg.audit.validate(); err != nil {
		return err
	}
	return checkServeArgs(cfg.serveArgs)
}

// soakRun is one run in progress.
type soakRun struct {
	cfg       soakConfig
	client    *http.Client
	transport *http.Transport
	child     *soakChild
	load      *soakLoad
	stats     *soakStats
	rss       *rssSampler
	events    *soakEvents // nil with --events=false
	audits    auditRuns
	start     time.Time
	loadEnd   time.Time // when the clients stopped

	mu       sync.Mutex
	failures []string // found during the run: a crash, RSS over the bound
	crashed  bool
}

// runSoak starts the child, drives the load for cfg.duration and returns
// the report. An error means the run could not be set up; problems found
// while running are in the report. The child is stopped on every path.
func runSoak(ctx context.Context, cfg soakConfig, progress io.Writer) (*soakReport, error) {
	r := &soakRun{cfg: cfg, stats: &soakStats{}}
	r.transport = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:          2 * cfg.clients,
		MaxIdleConnsPerHost:   2 * cfg.clients,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: cfg.requestTimeout,
		DisableCompression:    true,
	}
	defer r.transport.CloseIdleConnections()
	r.client = &http.Client{Transport: r.transport, Timeout: cfg.requestTimeout}
	serveArgs := slices.Clone(cfg.serveArgs)
	if cfg.events.on {
		ev, err := startEvents(cfg.events, cfg.seed)
		if err != nil {
			return nil, err
		}
		r.events = ev
		defer ev.close() // also on a panic below: never leave a publisher behind
		serveArgs = append(serveArgs, ev.serveArgs()...)
	}
	child, err := startChild(ctx, cfg.bin, serveArgs, r.client)
	if err != nil {
		return nil, err
	}
	r.child = child
	defer child.stop() // also on a panic below: never leave the server behind
	if r.events != nil {
		if err := r.events.awaitSubscribers(); err != nil {
			return nil, err
		}
	}
	if r.load, err = newSoakLoad(ctx, r.client, child.base(), cfg); err != nil {
		return nil, err
	}
	if r.events != nil {
		r.load.pinned = r.events.pinned
	}
	r.rss = &rssSampler{pid: child.pid()}
	r.drive(ctx, progress)
	return r.finish(ctx), nil
}

// drive runs every goroutine of the load until cfg.duration passes, ctx
// ends, or a failure stops the run early; it returns when all have ended.
func (r *soakRun) drive(ctx context.Context, progress io.Writer) {
	runCtx, cancel := context.WithTimeout(ctx, r.cfg.duration)
	defer cancel()
	r.start = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { r.watchChild(runCtx, cancel) })
	wg.Go(func() {
		r.rss.run(runCtx, r.start, r.cfg.maxRSS, func(s rssSample) {
			r.fail(fmt.Sprintf("server RSS %s exceeded --max-rss %s at %s; the run was stopped there",
				mib(s.bytes), mib(r.cfg.maxRSS), s.at.Round(time.Second)))
			cancel()
		})
	})
	for id := range r.cfg.clients {
		wg.Go(func() { r.worker(runCtx, id) })
	}
	wg.Go(func() { r.spawnSlow(runCtx) })
	if r.events != nil {
		for _, s := range r.events.sources {
			wg.Go(func() { r.runSource(runCtx, s) })
		}
		wg.Go(func() { r.watchEvents(runCtx) })
	}
	var audits sync.WaitGroup
	if r.cfg.audit.on {
		audits.Go(func() { r.auditLoop(runCtx, ctx) })
	}
	if progress != nil && r.cfg.progressEvery > 0 {
		wg.Go(func() { r.printProgress(runCtx, progress) })
	}
	wg.Wait()
	r.loadEnd = time.Now()
	audits.Wait() // the run in progress finishes, within --audit-timeout
}

// watchChild stops the run as soon as the child exits on its own.
func (r *soakRun) watchChild(ctx context.Context, cancel context.CancelFunc) {
	select {
	case <-ctx.Done():
	case <-r.child.done:
		r.noteCrash()
		cancel()
	}
}

// noteCrash records, once, that the child exited without being told to.
func (r *soakRun) noteCrash() {
	if r.child.stopping.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.crashed {
		return
	}
	r.crashed = true
	msg := fmt.Sprintf("kvtwin serve exited during the run after %s: %v", time.Since(r.start).Round(time.Millisecond), r.child.waitErr)
	if crash := r.child.logs.crashLines(); len(crash) > 0 {
		msg += "; it printed: " + crash[0]
	}
	r.failures = append(r.failures, msg)
}

func (r *soakRun) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

// maxRequestsPerWorker bounds a worker's loop by count as well as by time.
const maxRequestsPerWorker = 1 << 26

// worker sends requests back to back until ctx ends. After a 429 it waits
// up to cfg.backoff429, as a client that honours push-back would (less than
// the server's Retry-After: 1, so the load stays high); one that retried at
// once would only measure how fast the server says 429.
func (r *soakRun) worker(ctx context.Context, id int) {
	w := &soakWorker{id: id, rng: rand.New(rand.NewPCG(r.cfg.seed, uint64(id)+1))}
	for i := 0; i < maxRequestsPerWorker && ctx.Err() == nil; i++ {
		req := r.load.next(w)
		o, ok := r.send(ctx, req)
		if !ok {
			continue
		}
		r.stats.record(o)
		if o.status == http.StatusTooManyRequests && r.cfg.backoff429 > 0 {
			sleepCtx(ctx, time.Duration(w.rng.Int64N(int64(r.cfg.backoff429))+1))
		}
	}
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// maxNoteBody is how much of a notable response body a note quotes.
const maxNoteBody = 300

// send makes one request and classifies the answer. ok is false when the
// run ended while it was in flight: that is neither a response nor an error.
func (r *soakRun) send(ctx context.Context, req soakRequest) (soakOutcome, bool) {
	o := soakOutcome{class: req.class, kind: req.kind}
	start := time.Now()
	hreq, err := http.NewRequestWithContext(ctx, req.method, r.child.base()+req.path, bytes.NewReader(req.body))
	if err != nil {
		o.transport, o.note = true, fmt.Sprintf("%s %s: %v", req.method, req.path, err)
		return o, true
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(hreq)
	if err != nil {
		o.transport, o.note = true, fmt.Sprintf("%s %s: %v", req.method, req.path, err)
		return o, !runEnded(ctx)
	}
	body, head, err := readAnswer(resp.Body, req.check != nil)
	resp.Body.Close()
	if err != nil {
		// A response cut short is no answer, whatever its status line said.
		o.transport, o.note = true, fmt.Sprintf("%s %s: status %d, body cut: %v", req.method, req.path, resp.StatusCode, err)
		return o, !runEnded(ctx)
	}
	o.status, o.latency = resp.StatusCode, time.Since(start)
	o.unexpected = unexpectedStatus(req, o.status)
	if o.status >= 500 || o.unexpected {
		o.note = fmt.Sprintf("%s %s (%d-byte body): %d %s", req.method, req.path, len(req.body), o.status, bytes.TrimSpace(head))
		return o, true
	}
	if req.check != nil && o.status == req.want {
		msg := fmt.Sprintf("answer over %d bytes", maxScoreBody)
		if len(body) <= maxScoreBody {
			msg = req.check(body)
		}
		if msg != "" {
			o.unexpected, o.note = true, fmt.Sprintf("%s %s: %s", req.method, req.path, msg)
		}
	}
	return o, true
}

// readAnswer reads a response body to its end: whole (up to one byte past
// maxScoreBody) when it is to be checked, else only its head is kept. head
// is what a note quotes.
func readAnswer(r io.Reader, whole bool) (body, head []byte, err error) {
	if whole {
		body, err = io.ReadAll(io.LimitReader(r, maxScoreBody+1))
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		return body, body[:min(len(body), maxNoteBody)], err
	}
	head = make([]byte, maxNoteBody)
	n, _ := io.ReadFull(r, head)
	_, err = io.Copy(io.Discard, r)
	return nil, head[:n], err
}

// runEnded reports whether the run is over. A context past its deadline
// is, even before its timer has set Err: a dial or request failing at that
// instant reports "i/o timeout", and that is the run ending, not the server.
func runEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// unexpectedStatus: a well-behaved request must get its wanted status or a
// 429; a hostile body that must be refused must not get a 2xx.
func unexpectedStatus(req soakRequest, status int) bool {
	if req.class.wellBehaved() {
		return status != req.want && status != http.StatusTooManyRequests && status < 500
	}
	return req.kind.mustReject() && status >= 200 && status < 300
}

// printProgress writes one line per cfg.progressEvery until ctx ends.
func (r *soakRun) printProgress(ctx context.Context, w io.Writer) {
	tick := time.NewTicker(r.cfg.progressEvery)
	defer tick.Stop()
	last, lastAt := int64(0), r.start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			total := r.stats.total.Load()
			rate := float64(total-last) / now.Sub(lastAt).Seconds()
			last, lastAt = total, now
			fmt.Fprintln(w, r.progressLine(now.Sub(r.start), rate))
		}
	}
}

// finish stops the child after checking its slots drained, and builds the report.
func (r *soakRun) finish(ctx context.Context) *soakReport {
	elapsed := r.loadEnd.Sub(r.start)
	inFlight, inFlightErr := -1, error(nil)
	if r.child.exited() {
		r.noteCrash() // in the moment between the run's end and this check
	} else {
		inFlight, inFlightErr = r.awaitSlotsFree(ctx)
	}
	var events *eventsReport
	if r.events != nil {
		events = r.finishEvents(ctx)
		for _, msg := range r.events.close() {
			r.fail(msg)
		}
	}
	pools := r.poolTotals(ctx)
	stopErr := r.child.stop()
	r.transport.CloseIdleConnections()
	rep := r.report(elapsed, inFlight, inFlightErr, pools, stopErr, ctx.Err() != nil)
	rep.Events = events
	if r.cfg.audit.on {
		rep.Audit = r.auditSummary()
		if rep.Audit.Runs == 0 && !rep.Interrupted {
			rep.Failures = append(rep.Failures, "no audit run finished")
			rep.Pass = false
		}
	}
	return rep
}

// slotDrainTimeout is how long the server may take to release its compute
// slots once every client has gone: a blocked handler sees its connection
// closed at once, so this is generous.
const slotDrainTimeout = 5 * time.Second

// awaitSlotsFree polls /metrics until kvtwin_op_requests_in_flight is 0 and
// returns the last value seen: a slot held with no client left is a leak.
func (r *soakRun) awaitSlotsFree(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotDrainTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := r.inFlight(ctx)
		if err == nil && n == 0 {
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return n, err
		case <-tick.C:
		}
	}
}
