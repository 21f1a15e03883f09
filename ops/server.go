// Package ops serves what an operator needs to see a running pool: health
// and readiness, Prometheus metrics, a server-rendered status page and the
// same data as JSON. It also reads that JSON back for `pool status`.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"pool/internal/httpserve"
	"pool/statuspage"
)

// Check is one readiness condition: Probe returns why it fails, or nil.
type Check struct {
	Name  string
	Probe func(ctx context.Context) error
}

// Server is the ops listener's handlers.
type Server struct {
	Status  func() statuspage.Status // the pool's status now
	Metrics http.Handler             // may be nil
	Checks  []Check
	// CacheFor reuses a readiness answer this long, so frequent probes do
	// not turn into forge and agent requests; 0 means 5 s.
	CacheFor time.Duration

	mu      sync.Mutex // guards ready and readyAt
	ready   readiness
	readyAt time.Time
}

// Handler routes /healthz, /readyz, /metrics, /api/status and the page at /.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.Metrics != nil {
		mux.Handle("GET /metrics", s.Metrics)
	}
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Status())
	})
	mux.HandleFunc("GET /{$}", s.page)
	return mux
}

// readiness is the /readyz answer.
type readiness struct {
	Ready  bool          `json:"ready"`
	Checks []checkResult `json:"checks"`
}

type checkResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := s.readiness(r.Context())
	code := http.StatusOK
	if !rd.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, rd)
}

// readiness runs every check (concurrently, 5 s each) unless a recent
// answer can be reused.
func (s *Server) readiness(ctx context.Context) readiness {
	cacheFor := s.CacheFor
	if cacheFor == 0 {
		cacheFor = 5 * time.Second
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.readyAt.IsZero() && time.Since(s.readyAt) < cacheFor {
		return s.ready
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	results := make([]checkResult, len(s.Checks))
	var wg sync.WaitGroup
	for i, c := range s.Checks {
		wg.Go(func() {
			results[i] = checkResult{Name: c.Name, OK: true}
			if err := c.Probe(ctx); err != nil {
				results[i] = checkResult{Name: c.Name, Reason: err.Error()}
			}
		})
	}
	wg.Wait()
	rd := readiness{Ready: true, Checks: results}
	for _, res := range results {
		rd.Ready = rd.Ready && res.OK
	}
	s.ready, s.readyAt = rd, time.Now()
	return rd
}

// CycleFresh is the check that the last discovery cycle ended less than max ago.
func CycleFresh(status func() statuspage.Status, max time.Duration) Check {
	return Check{Name: "cycle", Probe: func(context.Context) error {
		st := status()
		switch age := st.Now.Sub(st.LastCycle); {
		case st.LastCycle.IsZero():
			return errors.New("no discovery cycle has finished yet")
		case age > max:
			return fmt.Errorf("last cycle ended %s ago (limit %s)", age.Round(time.Second), max)
		}
		return nil
	}}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Serve listens on addr and serves h until ctx ends. It returns nil after a
// shutdown caused by ctx, and an error if it cannot listen or serve.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	return httpserve.Listen(ctx, addr, h, httpserve.Options{Name: "ops", WriteTimeout: 30 * time.Second}, log)
}
