package server

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	m.requests.WithLabelValues(op, impl, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(op, impl).Observe(d.Seconds())
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
