package server

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kvtwin/kvtwin/prefix"
)

// metrics are one server's Prometheus collectors, on a registry of its own:
// two servers in one process (tests) never share or collide on counters.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	panics   prometheus.Counter
}

// latencyBuckets span 10µs to ~2.7 min by ×4: ops range from a few
// microseconds on small inputs to seconds on 64 MiB bodies.
func latencyBuckets() []float64 { return prometheus.ExponentialBuckets(10e-6, 4, 12) }

func newMetrics(inflight *atomic.Int64) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvtwin_op_requests_total",
			Help: "Op requests (POST /v1/ops/{name}) by op, implementation and HTTP status code.",
		}, []string{"op", "impl", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kvtwin_op_request_duration_seconds",
			Help:    "Op request latency, from routing to the last byte written, by op and implementation.",
			Buckets: latencyBuckets(),
		}, []string{"op", "impl"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvtwin_recovered_panics_total",
			Help: "Panics recovered by the server and answered with 500.",
		}),
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kvtwin_op_requests_in_flight",
		Help: "Op requests holding one of the MaxConcurrent slots.",
	}, func() float64 { return float64(inflight.Load()) })
	m.registry.MustRegister(m.requests, m.latency, m.panics, inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one finished op request.
func (m *metrics) observe(op, impl string, code int, d time.Duration) {
	m.requests.WithLabelValues(op, impl, codeLabel(code)).Inc()
	m.latency.WithLabelValues(op, impl).Observe(d.Seconds())
}

// codeLabel is the status label; the codes the server answers with are
// constants, so the hot path formats nothing.
func codeLabel(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusBadRequest:
		return "400"
	case http.StatusRequestEntityTooLarge:
		return "413"
	case http.StatusTooManyRequests:
		return "429"
	}
	return strconv.Itoa(code)
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// poolCollector exports every pool's counters, occupancy and memory
// reservation, labelled by pool, and the registry's memory budget, read
// from the registry at scrape time: the series are exactly the live pools,
// so deleting a pool deletes its series, and no request path pays for
// metric bookkeeping. Pool names are bounded in number (Prefix.MaxPools)
// and in form, so the label set is bounded too.
type poolCollector struct {
	pools   *prefix.Registry
	metrics []poolMetric
	// budget and reserved are the registry-wide gauges of prefix.Budget.
	budget, reserved *prometheus.Desc
}

func newPoolCollector(pools *prefix.Registry) poolCollector {
	return poolCollector{pools: pools, metrics: poolMetrics(),
		budget: prometheus.NewDesc("kvtwin_prefix_budget_bytes",
			"Memory all prefix pools together may reserve (Prefix.MaxBytes, --prefix-max-bytes).", nil, nil),
		reserved: prometheus.NewDesc("kvtwin_prefix_budget_reserved_bytes",
			"Memory the live prefix pools reserve, each its worst case at full capacity.", nil, nil),
	}
}

// poolMetric is one per-pool series: its description, kind and value.
type poolMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(prefix.Stats) float64
}

func poolMetrics() []poolMetric {
	def := func(name, help string, kind prometheus.ValueType, v func(prefix.Stats) float64) poolMetric {
		return poolMetric{desc: prometheus.NewDesc(name, help, []string{"pool"}, nil), kind: kind, value: v}
	}
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	return []poolMetric{
		def("kvtwin_prefix_query_tokens_total", "Tokens passed to match, by pool.", c,
			func(s prefix.Stats) float64 { return float64(s.QueryTokens) }),
		def("kvtwin_prefix_hit_tokens_total", "Units match found cached, by pool.", c,
			func(s prefix.Stats) float64 { return float64(s.HitTokens) }),
		def("kvtwin_prefix_inserted_tokens_total", "Units newly cached by insert, by pool.", c,
			func(s prefix.Stats) float64 { return float64(s.InsertedTokens) }),
		def("kvtwin_prefix_evicted_tokens_total", "Units evicted, explicitly or to fit an insert, by pool.", c,
			func(s prefix.Stats) float64 { return float64(s.EvictedTokens) }),
		def("kvtwin_prefix_evictions_total", "Nodes evicted, by pool.", c,
			func(s prefix.Stats) float64 { return float64(s.Evictions) }),
		def("kvtwin_prefix_size_tokens", "Slots holding cached units, by pool.", g,
			func(s prefix.Stats) float64 { return float64(s.UsedTokens) }),
		def("kvtwin_prefix_evictable_tokens", "Cached units in unlocked nodes, by pool.", g,
			func(s prefix.Stats) float64 { return float64(s.EvictableTokens) }),
		def("kvtwin_prefix_protected_tokens", "Cached units in locked nodes, by pool.", g,
			func(s prefix.Stats) float64 { return float64(s.ProtectedTokens) }),
		def("kvtwin_prefix_capacity_tokens", "Slots the pool owns, by pool.", g,
			func(s prefix.Stats) float64 { return float64(s.CapacityTokens) }),
		def("kvtwin_prefix_reserved_bytes", "Memory the pool reserves from the budget (its worst case at full capacity), by pool.", g,
			func(s prefix.Stats) float64 { return float64(s.ReservedBytes) }),
		def("kvtwin_prefix_shadow_diverged", "1 when the pool's reference shadow (--verify-state) found a divergence, 0 while it agrees, -1 when it was lost or there is none, by pool.", g,
			func(s prefix.Stats) float64 {
				if s.Shadow == nil {
					return -1
				}
				return shadowGauge(*s.Shadow)
			}),
	}
}

// Describe implements prometheus.Collector.
func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.budget
	ch <- c.reserved
}

// Collect implements prometheus.Collector.
func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.pools.Budget()
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(b.MaxBytes))
	ch <- prometheus.MustNewConstMetric(c.reserved, prometheus.GaugeValue, float64(b.ReservedBytes))
	for _, n := range c.pools.List() {
		st := n.Pool.Stats()
		for _, m := range c.metrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(st), n.Name)
		}
	}
}

// handleMetrics serves GET /metrics: h (the registry's promhttp handler)
// renders into a buffer, which is then written like every answer, under the
// rate deadline and, when over SmallAnswerBytes (many pools or engines),
// through the write budget. Streamed straight to the connection, a slow
// scraper would hold the gathered metric families until WriteTimeout.
func (s *Server) handleMetrics(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &renderedAnswer{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		ctx, cancel := s.answerContext(r)
		defer cancel()
		s.answer(ctx, w, r, nil, rec.status, rec.header.Get("Content-Type"), rec.body.Bytes())
	}
}

// renderedAnswer is an http.ResponseWriter that keeps what a handler
// answers, to be written later.
type renderedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// Header implements http.ResponseWriter.
func (a *renderedAnswer) Header() http.Header { return a.header }

// WriteHeader implements http.ResponseWriter.
func (a *renderedAnswer) WriteHeader(status int) { a.status = status }

// Write implements http.ResponseWriter.
func (a *renderedAnswer) Write(p []byte) (int, error) { return a.body.Write(p) }
