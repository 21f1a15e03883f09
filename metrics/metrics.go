// Package metrics holds the pool's Prometheus metrics: counters the
// supervisor bumps through a narrow interface, gauges read from its status
// at scrape time, and wrappers that count HTTP traffic without the forge and
// agent clients knowing (a RoundTripper for each client, a handler wrapper
// for webhook deliveries).
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one pool process's metrics, on a registry of its own.
type Metrics struct {
	reg *prometheus.Registry

	sessionsStarted  *prometheus.CounterVec
	sessionsFinished *prometheus.CounterVec
	mergeCalls       *prometheus.CounterVec
	merged           *prometheus.CounterVec
	retries          prometheus.Counter
	forgeRequests    *prometheus.CounterVec
	agentRequests    *prometheus.CounterVec
	reconnects       prometheus.Counter
	webhooks         *prometheus.CounterVec
	cycles           prometheus.Histogram
	claimRaces       *prometheus.CounterVec
	updates          prometheus.Counter
	trains           prometheus.Counter
	cars             prometheus.Counter
	ejections        prometheus.Counter

	mu      sync.Mutex // guards streams and opened
	streams int        // event streams open now
	opened  int        // event streams ever opened
}

// Gauges are the pool's current figures, read at each scrape.
type Gauges struct {
	SlotsBusy, SlotsTotal int
	PRsByState            map[string]int
	AgentServers          []AgentServer
}

// AgentServer is one agent server's figures.
type AgentServer struct {
	URL                            string
	Up                             bool
	Slots, Sessions, Started, Lost int
}

// New makes the metrics. gauges is called at every scrape; it may be nil.
func New(gauges func() Gauges) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.sessionsStarted = m.counterVec("pool_sessions_started_total", "Reviewer and fixer sessions started, by kind.", "kind")
	m.sessionsFinished = m.counterVec("pool_sessions_finished_total", "Sessions collected, by how they ended (idle, error, gone, timeout, stuck).", "outcome")
	m.mergeCalls = m.counterVec("pool_merge_calls_total", "Merge calls the pool made, by the forge's answer.", "outcome")
	m.merged = m.counterVec("pool_prs_merged_total", "Tracked PRs seen merged, by who merged them (pool, human).", "by")
	m.retries = m.counter("pool_merge_retry_attempts_total", "Merge calls on approved PRs that failed (not refusals, not \"try again later\").")
	m.forgeRequests = m.counterVec("pool_forge_requests_total", "HTTP requests to the forge API, by endpoint class and status code (\"error\": no answer).", "endpoint", "code")
	m.agentRequests = m.counterVec("pool_agent_requests_total", "HTTP requests to the agent server, by endpoint class and status code (\"error\": no answer).", "endpoint", "code")
	m.reconnects = m.counter("pool_agent_event_stream_reconnects_total", "Times the agent server's event stream was opened again after the first.")
	m.webhooks = m.counterVec("pool_webhook_deliveries_total", "Forge webhook deliveries, by verdict (woke, ignored, rejected, bad_request, too_large, bad_method).", "verdict")
	m.claimRaces = m.counterVec("pool_claim_races_total", "Claims posted and verified, by result (won, lost).", "result")
	m.updates = m.counter("pool_head_updates_total", "PR branches the forge updated at the pool's call (each new head is one CI run).")
	m.trains = m.counter("pool_trains_formed_total", "Merge trains formed (a first car on a base with none).")
	m.cars = m.counter("pool_train_cars_total", "Merge train cars pushed to their train branches (each is one CI run).")
	m.ejections = m.counter("pool_train_ejections_total", "Merge train cars whose checks failed: their PR left the train with one note.")
	m.cycles = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pool_cycle_duration_seconds",
		Help: "Duration of discovery cycles.", Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10)})
	m.reg.MustRegister(m.cycles,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pool_agent_event_stream_connected", Help: "1 while the agent server's event stream is open."},
			func() float64 { return boolFloat(m.EventStreamConnected()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if gauges != nil {
		m.reg.MustRegister(gaugeCollector{read: gauges})
	}
	return m
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SessionStarted counts a session of kind (review, fix) started.
func (m *Metrics) SessionStarted(kind string) { m.sessionsStarted.WithLabelValues(kind).Inc() }

// SessionFinished counts a session collected with the watcher's outcome.
func (m *Metrics) SessionFinished(outcome string) { m.sessionsFinished.WithLabelValues(outcome).Inc() }

// MergeCalled counts a merge call by the forge's answer (merged, scheduled, conflict, ...).
func (m *Metrics) MergeCalled(outcome string) { m.mergeCalls.WithLabelValues(outcome).Inc() }

// Merged counts a tracked PR seen merged: by "pool" or "human".
func (m *Metrics) Merged(by string) { m.merged.WithLabelValues(by).Inc() }

// RetryAttempted counts one more merge retry attempt.
func (m *Metrics) RetryAttempted() { m.retries.Inc() }

// CycleDone records one discovery cycle's duration.
func (m *Metrics) CycleDone(d time.Duration) { m.cycles.Observe(d.Seconds()) }

// ClaimRace counts a verified claim, won or lost.
func (m *Metrics) ClaimRace(won bool) {
	result := "lost"
	if won {
		result = "won"
	}
	m.claimRaces.WithLabelValues(result).Inc()
}

// HeadUpdated counts a PR branch the forge updated at the pool's call.
func (m *Metrics) HeadUpdated() { m.updates.Inc() }

// TrainFormed counts a merge train formed.
func (m *Metrics) TrainFormed() { m.trains.Inc() }

// CarFormed counts a merge train car pushed for CI.
func (m *Metrics) CarFormed() { m.cars.Inc() }

// CarEjected counts a car ejected for failing checks.
func (m *Metrics) CarEjected() { m.ejections.Inc() }

// EventStreamConnected reports whether the agent server's event stream is open now.
func (m *Metrics) EventStreamConnected() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.streams > 0
}

// gaugeCollector reads the pool's current figures at scrape time, so the
// gauges can never drift from what the status page shows.
type gaugeCollector struct {
	read func() Gauges
}

var (
	slotsBusyDesc  = prometheus.NewDesc("pool_slots_busy", "Slots holding a PR now (claiming, reviewing or collecting).", nil, nil)
	slotsTotalDesc = prometheus.NewDesc("pool_slots_total", "Slots configured (workers).", nil, nil)
	prsDesc        = prometheus.NewDesc("pool_prs", "Tracked PRs by lifecycle state.", []string{"state"}, nil)
	serverUpDesc   = prometheus.NewDesc("pool_agent_server_up", "1 while the agent server answers its checks.", []string{"server"}, nil)
	serverSlots    = prometheus.NewDesc("pool_agent_server_slots", "Slots (workers) of the agent server.", []string{"server"}, nil)
	serverSessions = prometheus.NewDesc("pool_agent_server_sessions", "Sessions running on the agent server now.", []string{"server"}, nil)
	serverStarted  = prometheus.NewDesc("pool_agent_server_sessions_started_total", "Sessions placed on the agent server.", []string{"server"}, nil)
	serverLost     = prometheus.NewDesc("pool_agent_server_sessions_lost_total", "Sessions counted lost while the agent server was down.", []string{"server"}, nil)
)

func (g gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- slotsBusyDesc
	ch <- slotsTotalDesc
	ch <- prsDesc
	for _, d := range []*prometheus.Desc{serverUpDesc, serverSlots, serverSessions, serverStarted, serverLost} {
		ch <- d
	}
}

func (g gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	v := g.read()
	ch <- prometheus.MustNewConstMetric(slotsBusyDesc, prometheus.GaugeValue, float64(v.SlotsBusy))
	ch <- prometheus.MustNewConstMetric(slotsTotalDesc, prometheus.GaugeValue, float64(v.SlotsTotal))
	for state, n := range v.PRsByState {
		ch <- prometheus.MustNewConstMetric(prsDesc, prometheus.GaugeValue, float64(n), state)
	}
	for _, a := range v.AgentServers {
		up := 0.0
		if a.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(serverUpDesc, prometheus.GaugeValue, up, a.URL)
		ch <- prometheus.MustNewConstMetric(serverSlots, prometheus.GaugeValue, float64(a.Slots), a.URL)
		ch <- prometheus.MustNewConstMetric(serverSessions, prometheus.GaugeValue, float64(a.Sessions), a.URL)
		ch <- prometheus.MustNewConstMetric(serverStarted, prometheus.CounterValue, float64(a.Started), a.URL)
		ch <- prometheus.MustNewConstMetric(serverLost, prometheus.CounterValue, float64(a.Lost), a.URL)
	}
}
