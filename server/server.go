package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
	"golang.org/x/sync/semaphore"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// allImpls is every implementation name, in the order readiness reports them.
func allImpls() []catalog.Impl { return []catalog.Impl{catalog.Ref, catalog.Fast, catalog.CUDA} }

// Server serves the catalog over HTTP. Build it with New; it is safe for
// concurrent use and serves once (Serve or ListenAndServe).
type Server struct {
	cfg      Config
	log      *slog.Logger
	ops      []*opInfo
	byName   map[string]*opInfo
	listBody []byte
	metrics  *metrics
	pools    *prefix.Registry
	handler  http.Handler
	// events is the event-fed index and its subscriber, nil without
	// Config.Events.
	events *events
	// verify re-runs sampled op answers (--verify); nil when off.
	verify *verifier
	// ready is when Serve started and whether the event sources caught up.
	ready readyLatch

	// preflight holds, per implementation, the preflight's twins or why
	// the implementation has none (catalog.Preflight), looked up once.
	preflight map[catalog.Impl]preflightTwins
	// poolsUnavailable is why Impl has no prefix-pool radix tree
	// (catalog.RadixTree: cuda), or nil; a pool create then answers 400.
	poolsUnavailable error

	// bodies is the MaxBodyBytesInFlight budget of request bodies held.
	bodies *semaphore.Weighted
	// tokenBufs recycles the decoded token lists of the routes that do not
	// keep them (score, match; prefix_body.go): a fresh list of a long
	// prompt costs more in page faults than decoding it.
	tokenBufs sync.Pool
	// bodyBufs recycles the bodies of the routes whose decoded input holds
	// no slice of its body (the prefix routes; intake.go).
	bodyBufs sync.Pool
	// auth is who may call which route, and the TLS in service (auth.go).
	auth *authState
	// router is the mux under the root handler, for the route-table test.
	router *mux.Router
	// answers is the MaxResponseBytesInFlight budget of answers being
	// written (responses.go).
	answers *responseBudget
	// sourceSchema is the gate's view of an event source's body.
	sourceSchema *jsonscan.Schema

	draining atomic.Bool
	inflight atomic.Int64
	served   atomic.Bool
}

// opInfo is one served op with, per implementation it lacks, the reason.
type opInfo struct {
	entry       catalog.Entry
	unavailable map[catalog.Impl]error
	schema      *jsonscan.Schema // the gate's view of the op's input type
}

// New validates cfg and builds a Server over cfg.Entries (catalog.All() when
// nil). A configuration error is an *spec.InputError wrapping ErrBadConfig
// that names the field, its value and the bound; an Impl some op lacks in
// this build (cuda without -tags cuda) is rejected with the catalog's reason.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	entries := cfg.Entries
	if entries == nil {
		entries = catalog.All()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, byName: make(map[string]*opInfo, len(entries)),
		bodies: semaphore.NewWeighted(cfg.MaxBodyBytesInFlight)}
	s.answers = newResponseBudget(cfg.MaxResponseBytesInFlight, cfg.MaxConcurrent)
	s.sourceSchema = jsonscan.SchemaOf(reflect.TypeFor[zmq.Source]())
	for _, e := range entries {
		o := &opInfo{entry: e, unavailable: unavailableImpls(e, cfg), schema: jsonscan.SchemaOf(e.InputType())}
		s.ops = append(s.ops, o)
		s.byName[e.Name()] = o
	}
	if err := checkImplEverywhere(cfg.Impl, s.ops); err != nil {
		return nil, err
	}
	body, err := encodeOpList(s.ops)
	if err != nil {
		return nil, err
	}
	s.listBody = body
	s.preflight = make(map[catalog.Impl]preflightTwins, len(allImpls()))
	for _, impl := range allImpls() {
		tw, err := catalog.Preflight(impl)
		s.preflight[impl] = preflightTwins{tw, err}
	}
	newTree, err := catalog.RadixTree(cfg.Impl)
	if cfg.NewRadixTree != nil {
		newTree, err = cfg.NewRadixTree, nil
	}
	if err != nil {
		// Only cuda gets here (validate accepted the name, and the op check
		// a usable device): the pools then refuse creates, naming this, and
		// never fall back to another tree.
		s.poolsUnavailable = err
		newTree = func(spec.TreeConfig) (spec.RadixTree, error) { return nil, err }
	}
	if s.pools, err = prefix.NewRegistry(newTree, cfg.Prefix); err != nil {
		return nil, err
	}
	if s.events, err = newEvents(cfg); err != nil {
		return nil, err
	}
	if s.auth, err = newAuth(cfg); err != nil {
		return nil, err
	}
	if s.verify, err = newVerifier(cfg.Verify, cfg.Limits, cfg.Logger); err != nil {
		return nil, err
	}
	if err := s.verify.enableShadows(s.pools); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(&s.inflight)
	s.metrics.registry.MustRegister(s.auth.collectors()...)
	s.metrics.registry.MustRegister(newPoolCollector(s.pools))
	s.metrics.registry.MustRegister(s.answers.collectors()...)
	if s.events != nil {
		s.metrics.registry.MustRegister(newEventCollector(s.events))
	}
	if s.verify != nil {
		s.metrics.registry.MustRegister(s.verify.collectors()...)
	}
	if s.events != nil && s.events.shadow != nil {
		sh := s.events.shadow
		s.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kvtwin_events_shadow_diverged",
			Help: "1 when the event-fed index's reference shadow (--verify-state) found a divergence, 0 while it agrees, -1 when it was lost.",
		}, func() float64 { return shadowGauge(sh.Status()) }))
	}
	s.handler = s.routes()
	return s, nil
}

// unavailableImpls asks the entry why each implementation it does not list
// is missing. Entry.Run answers ErrImplUnavailable, with the reason, before
// it reads its input, so the probe runs nothing.
func unavailableImpls(e catalog.Entry, cfg Config) map[catalog.Impl]error {
	missing := map[catalog.Impl]error{}
	for _, impl := range allImpls() {
		if slices.Contains(e.Impls(), impl) {
			continue
		}
		_, err := e.Run(impl, cfg.Limits, nil)
		if !errors.Is(err, catalog.ErrImplUnavailable) {
			err = fmt.Errorf("%s: %w: %s is not one of its implementations %v", e.Name(), catalog.ErrImplUnavailable, impl, e.Impls())
		}
		missing[impl] = err
	}
	return missing
}

// opListing is one element of the GET /v1/ops array.
type opListing struct {
	Name    string          `json:"name"`
	Spec    string          `json:"spec"`
	Doc     string          `json:"doc"`
	Impls   []catalog.Impl  `json:"impls"`
	Example json.RawMessage `json:"example"`
}

// encodeOpList encodes GET /v1/ops once: the catalog is fixed for the
// server's lifetime.
func encodeOpList(ops []*opInfo) ([]byte, error) {
	list := make([]opListing, 0, len(ops))
	for _, o := range ops {
		e := o.entry
		list = append(list, opListing{Name: e.Name(), Spec: e.Spec(), Doc: e.Doc(), Impls: e.Impls(), Example: e.Example()})
	}
	b, err := encode(list)
	if err != nil {
		return nil, fmt.Errorf("encode GET /v1/ops: %w", err)
	}
	return b, nil
}

// Handler returns the server's root handler (routes, drain gate, panic
// recovery), for tests and for embedding behind another server.
func (s *Server) Handler() http.Handler { return s.handler }

// routes builds the router. Each path also answers every other method with
// 405 and an Allow header, so a wrong method is never mistaken for a 404.
func (s *Server) routes() http.Handler {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(s.notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(s.methodNotAllowed)
	r.Use(s.authorize) // every matched route: auth_routes.go's table
	s.router = r
	route := func(path, method string, h http.HandlerFunc) {
		r.Handle(path, h).Methods(method)
		r.Handle(path, s.allowOnly(method))
	}
	route("/v1/ops", http.MethodGet, s.drainGate(s.handleList))
	route("/v1/ops/{name}", http.MethodPost, s.drainGate(s.handleOp))
	route(PreflightPath, http.MethodPost, s.drainGate(s.handlePreflight))
	route("/healthz", http.MethodGet, s.handleHealthz)
	route("/readyz", http.MethodGet, s.handleReadyz)
	route("/metrics", http.MethodGet, s.handleMetrics(s.metrics.handler()))
	route("/v1/events/sources", http.MethodGet, s.drainGate(s.handleEventSources))
	r.Handle("/v1/events/sources/{name}", s.drainGate(s.handleEventSourcePut)).Methods(http.MethodPut)
	r.Handle("/v1/events/sources/{name}", s.drainGate(s.handleEventSourceDelete)).Methods(http.MethodDelete)
	r.Handle("/v1/events/sources/{name}", s.allowOnly("PUT, DELETE"))
	route("/v1/verify", http.MethodGet, s.handleVerify)
	route("/v1/verify/divergences", http.MethodGet, s.handleVerifyDivergences)
	s.prefixRoutes(r)
	return s.recoverPanics(r)
}

// httpServer is the http.Server Serve runs: the configured timeouts, and
// net/http's own errors (TLS, malformed requests) logged at WARN.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Addr:              s.cfg.Addr,
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// ErrServed is returned by a second call to Serve or ListenAndServe: a
// drained server does not come back.
var ErrServed = errors.New("server: already served")

// ListenAndServe listens on Config.Addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then drains: /readyz and new requests
// answer 503, ln is closed, and requests in flight get Config.ShutdownTimeout
// to finish. It returns nil on a clean shutdown, an error naming
// ShutdownTimeout when requests were cut off, or the listener's error if
// serving failed first. ln is closed in every case.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		ln.Close()
		return ErrServed
	}
	if err := s.auth.checkListener(ln.Addr(), s.log); err != nil {
		ln.Close()
		return err
	}
	hs := s.httpServer()
	s.ready.since.Store(time.Now().UnixNano())
	// Rotated certificates and tokens are re-read while Serve runs.
	rctx, stopReload := context.WithCancel(ctx)
	waitReload := s.auth.reload.start(rctx)
	defer func() { stopReload(); waitReload() }()
	// The subscriber lives exactly as long as Serve: it stops when ctx
	// does, and Serve returns only after its goroutines have ended.
	evctx, stopEvents := context.WithCancel(ctx)
	defer func() { stopEvents(); s.events.wait() }()
	s.events.start(evctx)
	// The verify workers outlive the drain (the answers sent last are
	// still checked) and end with Serve; what they did not reach is
	// counted as dropped.
	vctx, stopVerify := context.WithCancel(context.WithoutCancel(ctx))
	waitVerify := s.verify.run(vctx)
	defer func() { stopVerify(); waitVerify() }()
	served := make(chan error, 1)
	go func() { served <- s.serveConns(hs, netutil.LimitListener(ln, s.cfg.MaxConnections)) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "impl", string(s.cfg.Impl), "ops", len(s.ops),
		"tls", s.auth.tls != nil, "auth", s.cfg.Auth.mode(), "verify", s.cfg.Verify.Rate)
	select {
	case err := <-served:
		hs.Close() // the listener failed; do not leave its connections behind
		return fmt.Errorf("server: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	return s.drain(ctx, hs, served)
}

// drain shuts hs down gracefully within ShutdownTimeout, then closes what is
// left so no connection outlives Serve.
func (s *Server) drain(ctx context.Context, hs *http.Server, served <-chan error) error {
	s.draining.Store(true)
	s.log.Info("draining", "in_flight", s.inflight.Load(), "shutdown_timeout", s.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		hs.Close()
		err = fmt.Errorf("server: requests still in flight after ShutdownTimeout (%s) were cut off: %w", s.cfg.ShutdownTimeout, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("server: serve: %w", serr)
	}
	if err != nil {
		s.log.Error("shutdown", "err", err)
		return err
	}
	s.log.Info("shut down cleanly")
	return nil
}
