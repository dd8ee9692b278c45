package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvtwin/kvtwin/server"
)

// This file turns a finished run into its report and verdict, and renders
// the report as a table or as JSON (`kvtwin soak --json`, for docs).

// soakReport is the result of one run. Durations are in milliseconds and
// sizes in bytes, so the JSON needs no parsing of units.
type soakReport struct {
	// Seconds is how long the load ran.
	Seconds float64 `json:"seconds"`
	// Clients is the number of well-behaved workers.
	Clients int `json:"clients"`
	// HostileKinds lists the hostile kinds that were enabled.
	HostileKinds []string `json:"hostile_kinds"`
	// ServeArgs are the extra flags the child ran with.
	ServeArgs []string `json:"serve_args,omitempty"`
	// Requests counts every request of every class.
	Requests int64 `json:"requests"`
	// RequestsPerSec is Requests over Seconds.
	RequestsPerSec float64 `json:"requests_per_sec"`
	// Classes has one row per traffic class, then the total.
	Classes []classRow `json:"classes"`
	// Hostile has one row per enabled hostile kind.
	Hostile []kindRow `json:"hostile"`
	// Prefix sums the pools' counters at the end of the run.
	Prefix poolTotals `json:"prefix_pools"`
	// Events is what the KV-event publishers sent and the server applied
	// (absent with --events=false); the score class holds the checked
	// score requests.
	Events *eventsReport `json:"events,omitempty"`
	// Audit is the adapter audit's runs (absent with --audit=false).
	Audit *auditReportSummary `json:"audit,omitempty"`
	// RSS summarises the server's memory over the run.
	RSS rssReport `json:"rss"`
	// InFlightAfter is the server's busy compute slots once all clients
	// had stopped (-1: could not be read).
	InFlightAfter int `json:"in_flight_after"`
	// ChildExit says how the server ended.
	ChildExit string `json:"child_exit"`
	// Interrupted is set when SIGINT or SIGTERM cut the run short.
	Interrupted bool `json:"interrupted"`
	// Notes are the first notable responses (5xx, wrong answers, transport errors).
	Notes []string `json:"notes,omitempty"`
	// Observations are facts worth reading that fail nothing (e.g. a 429 storm).
	Observations []string `json:"observations,omitempty"`
	// Failures are why the run failed; empty when it passed.
	Failures []string `json:"failures"`
	// Pass is len(Failures) == 0.
	Pass bool `json:"pass"`
}

// classRow is one traffic class's line.
type classRow struct {
	// Class is preflight, op, prefix, score, hostile, slow or total.
	Class string `json:"class"`
	statusCounts
	// PerSec is the class's requests per second.
	PerSec float64 `json:"per_sec"`
	// P50Ms and P99Ms are latency percentiles (bucket upper edges, ±9%).
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// kindRow is one hostile kind's line.
type kindRow struct {
	// Kind is slow-write, slow-read, deep, huge, truncated or unknown.
	Kind string `json:"kind"`
	statusCounts
}

// rssReport is the server's memory over the run.
type rssReport struct {
	// Samples is the number of one-second samples.
	Samples int `json:"samples"`
	// MinBytes, MaxBytes and LastBytes are over all samples.
	MinBytes  int64 `json:"min_bytes"`
	MaxBytes  int64 `json:"max_bytes"`
	LastBytes int64 `json:"last_bytes"`
	// LimitBytes is --max-rss.
	LimitBytes int64 `json:"limit_bytes"`
	// Trend is the growth check (--max-rss-growth).
	Trend rssTrend `json:"trend"`
	// TimelineMiB is the RSS over the run, at most 60 points evenly spaced.
	TimelineMiB []float64 `json:"timeline_mib"`
	// TimelineStepSec is the time between timeline points.
	TimelineStepSec float64 `json:"timeline_step_sec"`
	// Error is why no sample could be taken, if none was.
	Error string `json:"error,omitempty"`
}

// poolTotals sums the soak pools' stats.
type poolTotals struct {
	// Pools is how many pools answered.
	Pools int `json:"pools"`
	// QueryTokens, HitTokens, InsertedTokens and EvictedTokens are the pools' counters summed.
	QueryTokens    int64 `json:"query_tokens"`
	HitTokens      int64 `json:"hit_tokens"`
	InsertedTokens int64 `json:"inserted_tokens"`
	EvictedTokens  int64 `json:"evicted_tokens"`
	// HitRatePct is HitTokens over QueryTokens.
	HitRatePct float64 `json:"hit_rate_pct"`
	// Error is the first failure reading or deleting a pool.
	Error string `json:"error,omitempty"`
}

// report assembles the report and its failures.
func (r *soakRun) report(elapsed time.Duration, inFlight int, inFlightErr error, pools poolTotals, stopErr error, interrupted bool) *soakReport {
	rep := &soakReport{Seconds: elapsed.Seconds(), Clients: r.cfg.clients, ServeArgs: r.cfg.serveArgs,
		InFlightAfter: inFlight, Prefix: pools, Interrupted: interrupted, ChildExit: "exited cleanly after SIGTERM"}
	for k := hostileNone + 1; k < numHostileKinds; k++ {
		if r.cfg.hostile.has(k) {
			rep.HostileKinds = append(rep.HostileKinds, k.String())
			rep.Hostile = append(rep.Hostile, kindRow{Kind: k.String(), statusCounts: r.stats.kindCounts(k)})
		}
	}
	rep.Classes = r.classRows(elapsed)
	total := rep.Classes[len(rep.Classes)-1]
	rep.Requests, rep.RequestsPerSec = total.Requests, total.PerSec
	rep.RSS = r.rssReport()
	rep.Notes, _ = r.stats.notesCopy()
	if stopErr != nil {
		rep.ChildExit = stopErr.Error()
	}
	r.mu.Lock()
	rep.Failures = append([]string(nil), r.failures...)
	crashed := r.crashed
	r.mu.Unlock()
	rep.Failures = append(rep.Failures, r.judge(rep, total, inFlightErr, stopErr, crashed)...)
	rep.Observations = r.observe(total)
	rep.Pass = len(rep.Failures) == 0
	return rep
}

// classRows is a row per class and a total row.
func (r *soakRun) classRows(elapsed time.Duration) []classRow {
	var rows []classRow
	for c := range numClasses {
		counts, p50, p99 := r.stats.snapshot(c)
		rows = append(rows, classRow{Class: c.String(), statusCounts: counts,
			PerSec: float64(counts.Requests) / elapsed.Seconds(), P50Ms: ms(p50), P99Ms: ms(p99)})
	}
	total, p50, p99 := r.stats.totals()
	return append(rows, classRow{Class: "total", statusCounts: total,
		PerSec: float64(total.Requests) / elapsed.Seconds(), P50Ms: ms(p50), P99Ms: ms(p99)})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// judge lists what fails the run, beyond what was found while it ran.
func (r *soakRun) judge(rep *soakReport, total classRow, inFlightErr error, stopErr error, crashed bool) []string {
	var fails []string
	add := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	if total.S5xx > 0 {
		add("%d responses were 5xx (see notes)", total.S5xx)
	}
	wb := r.stats.wellBehavedTotals()
	if attempts := wb.Requests; attempts == 0 {
		add("no well-behaved request completed")
	} else if pct := 100 * float64(wb.Transport) / float64(attempts); pct > r.cfg.maxTransportPct {
		add("%d of %d well-behaved requests (%.2f%%) got no response; --max-transport-errors is %g%%", wb.Transport, attempts, pct, r.cfg.maxTransportPct)
	}
	if wb.Requests > 0 {
		if pct := 100 * float64(wb.S429) / float64(wb.Requests); pct > r.cfg.max429Pct {
			add("429 storm: %d of %d well-behaved requests (%.1f%%) got 429; --max-429 is %g%%", wb.S429, wb.Requests, pct, r.cfg.max429Pct)
		}
	}
	if wb.Unexpected > 0 {
		add("%d well-behaved requests got a status other than the one they want or 429 (see notes)", wb.Unexpected)
	}
	for _, k := range rep.Hostile {
		if k.Unexpected > 0 {
			add("%d %s hostile bodies were accepted with 2xx; they must be refused", k.Unexpected, k.Kind)
		}
	}
	if rep.RSS.Trend.Exceeded {
		add("server RSS grew %.0f%% (%s to %s) from the first third of the run to the last; --max-rss-growth is %g%%",
			rep.RSS.Trend.GrowthPct, mib(rep.RSS.Trend.FirstThirdMax), mib(rep.RSS.Trend.LastThirdMedian), r.cfg.maxRSSGrowthPct)
	}
	if !crashed {
		if rep.InFlightAfter != 0 {
			add("the server still held %d compute slots %s after every client had stopped (%v)", rep.InFlightAfter, slotDrainTimeout, inFlightErr)
		}
		if stopErr != nil {
			add("kvtwin serve did not shut down cleanly: %v", stopErr)
		}
	}
	if rep.Interrupted {
		add("interrupted after %.1fs", rep.Seconds)
	}
	return fails
}

// observe notes what a reader should know that fails nothing.
func (r *soakRun) observe(total classRow) []string {
	var obs []string
	wb := r.stats.wellBehavedTotals()
	if wb.Requests > 0 && wb.S429 > 0 {
		obs = append(obs, fmt.Sprintf("%.1f%% of well-behaved requests got 429 (all compute slots taken)", 100*float64(wb.S429)/float64(wb.Requests)))
	}
	if total.OpenAtEnd > 0 {
		obs = append(obs, fmt.Sprintf("%d slow clients were still connected when the run ended: the server had not cut them off", total.OpenAtEnd))
	}
	if !r.rssTrendChecked() {
		obs = append(obs, fmt.Sprintf("RSS growth not judged: fewer than %d one-second samples", minTrendSamples))
	}
	return obs
}

func (r *soakRun) rssTrendChecked() bool {
	s, _ := r.rss.snapshot()
	return len(s) >= minTrendSamples
}

// maxTimeline is the most points the RSS timeline keeps.
const maxTimeline = 60

func (r *soakRun) rssReport() rssReport {
	samples, err := r.rss.snapshot()
	rep := rssReport{Samples: len(samples), LimitBytes: r.cfg.maxRSS}
	if len(samples) == 0 {
		if err != nil {
			rep.Error = err.Error()
		}
		return rep
	}
	values := make([]int64, len(samples))
	for i, s := range samples {
		values[i] = s.bytes
	}
	rep.MinBytes, rep.MaxBytes, rep.LastBytes = values[0], values[0], values[len(values)-1]
	for _, v := range values {
		rep.MinBytes, rep.MaxBytes = min(rep.MinBytes, v), max(rep.MaxBytes, v)
	}
	rep.Trend = judgeTrend(values, r.cfg.maxRSSGrowthPct)
	step := (len(values) + maxTimeline - 1) / maxTimeline
	for i := 0; i < len(values); i += step {
		rep.TimelineMiB = append(rep.TimelineMiB, float64(values[i]*10>>20)/10)
	}
	rep.TimelineStepSec = float64(step)
	return rep
}

// mib renders bytes as MiB with one decimal.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// progressLine is one --progress line.
func (r *soakRun) progressLine(at time.Duration, rate float64) string {
	t, _, _ := r.stats.totals()
	var b strings.Builder
	fmt.Fprintf(&b, "soak %4.0fs  %6.0f req/s  2xx %d  4xx %d  429 %d  5xx %d  transport %d", at.Seconds(), rate, t.S2xx, t.S4xx, t.S429, t.S5xx, t.Transport)
	if s, _ := r.rss.snapshot(); len(s) > 0 {
		lo, hi := s[0].bytes, s[0].bytes
		for _, x := range s {
			lo, hi = min(lo, x.bytes), max(hi, x.bytes)
		}
		fmt.Fprintf(&b, "  rss %s (min %s, max %s)", mib(s[len(s)-1].bytes), mib(lo), mib(hi))
	}
	if r.events != nil {
		fmt.Fprintf(&b, "  events applied %d", r.events.watch.appliedTotal())
	}
	b.WriteString("  p99 ms:")
	for c := range numClasses {
		_, _, p99 := r.stats.snapshot(c)
		fmt.Fprintf(&b, " %s %.1f", c, ms(p99))
	}
	return b.String()
}

// inFlight reads kvtwin_op_requests_in_flight from /metrics.
func (r *soakRun) inFlight(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.child.base()+"/metrics", nil)
	if err != nil {
		return -1, fmt.Errorf("GET /metrics: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return -1, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseInFlight(resp.Body)
}

// parseInFlight finds the in-flight gauge in a Prometheus text exposition.
func parseInFlight(body io.Reader) (int, error) {
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != "kvtwin_op_requests_in_flight" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return -1, fmt.Errorf("kvtwin_op_requests_in_flight %q: %w", value, err)
		}
		return int(v), nil
	}
	if err := sc.Err(); err != nil {
		return -1, fmt.Errorf("read /metrics: %w", err)
	}
	return -1, fmt.Errorf("no kvtwin_op_requests_in_flight in /metrics")
}

// poolTotals reads every soak pool's stats, then deletes the pool, so the
// report shows the hit rate and the delete route is exercised too.
func (r *soakRun) poolTotals(ctx context.Context) poolTotals {
	var t poolTotals
	if r.child.exited() {
		t.Error = "server gone"
		return t
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, p := range r.load.pools {
		var st server.PoolStats
		if err := r.poolCall(ctx, http.MethodGet, p.name, &st); err != nil {
			t.Error = err.Error()
			continue
		}
		t.Pools++
		t.QueryTokens += st.QueryTokens
		t.HitTokens += st.HitTokens
		t.InsertedTokens += st.InsertedTokens
		t.EvictedTokens += st.EvictedTokens
		if err := r.poolCall(ctx, http.MethodDelete, p.name, nil); err != nil && t.Error == "" {
			t.Error = err.Error()
		}
	}
	if t.QueryTokens > 0 {
		t.HitRatePct = 100 * float64(t.HitTokens) / float64(t.QueryTokens)
	}
	return t
}

// poolCall GETs or DELETEs /v1/prefix/{pool}, decoding a 200 into out.
func (r *soakRun) poolCall(ctx context.Context, method, pool string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.child.base()+"/v1/prefix/"+pool, nil)
	if err != nil {
		return fmt.Errorf("%s pool %s: %w", method, pool, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s pool %s: %w", method, pool, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s pool %s: status %d", method, pool, resp.StatusCode)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s pool %s: %w", method, pool, err)
	}
	return nil
}

// verdict is nil for a passing run, else the exit error naming the first failure.
func (rep *soakReport) verdict() error {
	if rep.Pass {
		return nil
	}
	msg := "soak failed: " + rep.Failures[0]
	if n := len(rep.Failures) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more: see the report)", n)
	}
	return &exitError{code: 1, msg: msg}
}

// write renders the report as indented JSON or as tables.
func (rep *soakReport) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	bw := bufio.NewWriter(w)
	rep.writeText(bw)
	return bw.Flush()
}

func (rep *soakReport) writeText(w io.Writer) {
	verdict := "PASS"
	if !rep.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "kvtwin soak: %s — %.1fs, %d clients, %d requests (%.0f/s), hostile: %s\n\n",
		verdict, rep.Seconds, rep.Clients, rep.Requests, rep.RequestsPerSec, strings.Join(rep.HostileKinds, ","))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\trequests\treq/s\tp50 ms\tp99 ms\t2xx\t4xx\t429\t5xx\tother\ttransport\tunexpected\t")
	for _, c := range rep.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.Class, c.Requests, c.PerSec, c.P50Ms, c.P99Ms,
			c.S2xx, c.S4xx, c.S429, c.S5xx, c.Other, c.Transport, c.Unexpected)
	}
	tw.Flush()
	if len(rep.Hostile) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "hostile\tsent\t2xx\t4xx\t429\t5xx\tother\ttransport\tcut by server\topen at end\taccepted (bad)\t")
		for _, k := range rep.Hostile {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k.Kind, k.Requests, k.S2xx, k.S4xx, k.S429, k.S5xx,
				k.Other, k.Transport, k.Cut, k.OpenAtEnd, k.Unexpected)
		}
		tw.Flush()
	}
	rep.writeTextTail(w)
}

func (rep *soakReport) writeTextTail(w io.Writer) {
	p := rep.Prefix
	fmt.Fprintf(w, "\nprefix pools: %d, query tokens %d, hit tokens %d (%.1f%%), inserted %d, evicted %d", p.Pools, p.QueryTokens, p.HitTokens, p.HitRatePct, p.InsertedTokens, p.EvictedTokens)
	if p.Error != "" {
		fmt.Fprintf(w, " (%s)", p.Error)
	}
	if rep.Events != nil {
		rep.Events.writeText(w)
	}
	if rep.Audit != nil {
		rep.Audit.writeText(w)
	}
	s := rep.RSS
	fmt.Fprintf(w, "\nRSS: %d samples, min %s, max %s, last %s (limit %s)", s.Samples, mib(s.MinBytes), mib(s.MaxBytes), mib(s.LastBytes), mib(s.LimitBytes))
	if s.Error != "" {
		fmt.Fprintf(w, " (%s)", s.Error)
	}
	if s.Trend.Checked {
		fmt.Fprintf(w, "\nRSS trend: first-third max %s, last-third median %s: %+.1f%%", mib(s.Trend.FirstThirdMax), mib(s.Trend.LastThirdMedian), s.Trend.GrowthPct)
	}
	if len(s.TimelineMiB) > 0 {
		fmt.Fprintf(w, "\nRSS MiB every %gs: %s", s.TimelineStepSec, strings.Trim(fmt.Sprint(s.TimelineMiB), "[]"))
	}
	fmt.Fprintf(w, "\nserver slots in flight after the clients stopped: %d\nserver: %s\n", rep.InFlightAfter, rep.ChildExit)
	for _, section := range []struct {
		title string
		lines []string
	}{{"notes", rep.Notes}, {"observations", rep.Observations}, {"failures", rep.Failures}} {
		if len(section.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", section.title)
		for _, l := range section.lines {
			fmt.Fprintf(w, "  - %s\n", l)
		}
	}
}
