package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"pool/agent"
	"pool/configs"
	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/pool"
	"pool/store"
)

// countingTransport records every request it carries.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex // guards reqs
	reqs []*url.URL
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u := *r.URL
	c.mu.Lock()
	c.reqs = append(c.reqs, &u)
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *countingTransport) requests() []*url.URL {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*url.URL(nil), c.reqs...)
}

// requestCount is figure 3: forge requests in each quiet cycle after the
// first; burst is the same right after seeding.
type requestCount struct {
	perCycle, burst []int
}

// figure3 counts forge requests per quiet cycle twice. First right after
// seeding, when hundreds of PRs were updated within the newest second (the
// pool's delta asks from a second before the newest update it has seen, so
// they come back every cycle); then in the steady state of a repository
// whose newest update is a single PR, which the bench makes by commenting on
// one quiet PR two seconds after the seeding: the figure.
func (b *bench) figure3(ctx context.Context) (requestCount, error) {
	b.progress("figure 3: in-process pool, %d open quiet PRs, poll 200ms, %d quiet cycles counted", b.opts.prs3, b.opts.cycles3)
	burst, err := b.countRequests(ctx, "fig3-burst")
	if err != nil {
		return requestCount{}, err
	}
	if err := b.touchNewestPR(ctx); err != nil {
		return requestCount{}, err
	}
	steady, err := b.countRequests(ctx, "fig3")
	if err != nil {
		return requestCount{}, err
	}
	return requestCount{perCycle: steady, burst: burst}, nil
}

// countRequests runs the pool in-process, as serve.Run wires it but with a
// counting HTTP client for the forge and without the clone (its git fetch
// each cycle would be extra, and is not counted), and returns the forge
// requests of each cycle after the first, checked against the cycles the
// pool reports (REVIEW_CYCLES_COMPLETED).
func (b *bench) countRequests(ctx context.Context, name string) ([]int, error) {
	ct := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	rep, err := b.runInProcess(ctx, name, ct)
	if err != nil {
		return nil, err
	}
	reqs := ct.requests()
	if err := writeRequests(filepath.Join(b.dir, name+"-requests.txt"), reqs); err != nil {
		return nil, err
	}
	cycles := splitCycles(reqs, b.sb.Owner, b.sb.Repo)
	if len(cycles) != rep.Cycles {
		b.progress("warning: %s: %d listings seen at the client, the pool reports %d cycles", name, len(cycles), rep.Cycles)
	}
	b.progress("  %s: forge requests per cycle: %v", name, cycles)
	if len(cycles) < 2 {
		return nil, fmt.Errorf("%s: only %d cycles seen", name, len(cycles))
	}
	return cycles[1:], nil
}

// runInProcess runs one pool until it goes idle: every cycle after the
// first is quiet, so idle exit after cycles3+1 cycles.
func (b *bench) runInProcess(ctx context.Context, name string, forgeTransport http.RoundTripper) (pool.Report, error) {
	sb := b.sb
	cfg := configs.Default()
	cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name = sb.Forge.URL, sb.PoolToken, sb.Owner, sb.Repo
	cfg.AgentURL = sb.Agent.URL
	cfg.Workers = 4
	// Below the 1 s floor a user may set: these cycles are counted, not
	// timed, and the forge is ours. So the config is not Validate'd.
	cfg.PollInterval = 200 * time.Millisecond
	cfg.StatusInterval = time.Second
	cfg.IdleExit = b.opts.cycles3 + 1
	cfg.SkipLabel = skipLabel
	cfg.StateDir = filepath.Join(b.dir, name, "state")
	cfg.SessionTimeout = 10 * time.Minute
	cfg.ChecksGrace = 0 // no CI here
	logFile, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		return pool.Report{}, fmt.Errorf("%s: %w", name, err)
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return runPoolInProcess(ctx, cfg, forgeTransport, log)
}

// runPoolInProcess is serve.Run's wiring without the clone, the webhook
// receiver and the review-item digests (only re-reviews and fixes read
// them; quiet PRs get neither).
func runPoolInProcess(ctx context.Context, cfg configs.Config, forgeTransport http.RoundTripper, log *slog.Logger) (pool.Report, error) {
	fc, err := sdkclient.New(ctx, cfg.ForgejoURL, cfg.Token, forgejo.Options{MaxBody: cfg.MaxBody, Transport: forgeTransport})
	if err != nil {
		return pool.Report{}, fmt.Errorf("in-process pool: connect to the forge: %w", err)
	}
	st, err := store.Open(cfg.StateDir, cfg.Owner, cfg.Name, log)
	if err != nil {
		return pool.Report{}, fmt.Errorf("in-process pool: %w", err)
	}
	defer st.Close()
	d := pool.Deps{Forge: fc, Agent: agent.New(cfg.AgentURL, cfg.AgentPassword, agent.Options{MaxBody: cfg.MaxBody}),
		Store: st, Log: log}
	p, err := pool.New(ctx, cfg, d)
	if err != nil {
		return pool.Report{}, fmt.Errorf("in-process pool: %w", err)
	}
	rep, err := p.Run(ctx)
	if err != nil {
		return rep, fmt.Errorf("in-process pool: %w", err)
	}
	return rep, nil
}

// writeRequests lists the requests, one a line, for a reader who wants to
// know what a cycle asked.
func writeRequests(path string, reqs []*url.URL) error {
	var b strings.Builder
	for _, u := range reqs {
		b.WriteString(u.RequestURI() + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write the request list: %w", err)
	}
	return nil
}

// splitCycles counts the requests of each cycle. A cycle starts with a
// listing: the PRs changed since a moment (the delta), or, for a full list,
// the forge-clock probe (an empty delta) that precedes the first page of the
// open PRs. Requests before the first listing (the token and repository
// checks) belong to no cycle.
func splitCycles(reqs []*url.URL, owner, repo string) []int {
	prefix := "/api/v1/repos/" + owner + "/" + repo + "/"
	var counts []int
	prev := ""
	for _, u := range reqs {
		kind := listingKind(u, prefix)
		if kind == "delta" || (kind == "full" && prev != "delta") {
			counts = append(counts, 0)
		}
		if len(counts) > 0 {
			counts[len(counts)-1]++
		}
		prev = kind
	}
	return counts
}

// listingKind says whether a request is the first page of a delta ("delta")
// or of the full list of open PRs ("full").
func listingKind(u *url.URL, prefix string) string {
	q := u.Query()
	if !strings.HasPrefix(u.Path, prefix) || q.Get("page") != "1" {
		return ""
	}
	switch strings.TrimPrefix(u.Path, prefix) {
	case "pulls":
		if q.Get("state") == "open" {
			return "full"
		}
	case "issues":
		if q.Get("since") != "" {
			return "delta"
		}
	}
	return ""
}
