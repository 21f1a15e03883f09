package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"pool/statuspage"
)

// maxStatusBody bounds the answer Fetch reads.
const maxStatusBody = 8 << 20

// Fetch reads a running pool's status from its ops listener at base (e.g.
// http://127.0.0.1:9090).
func Fetch(ctx context.Context, hc *http.Client, base string) (statuspage.Status, error) {
	url := strings.TrimRight(base, "/") + "/api/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return statuspage.Status{}, fmt.Errorf("ops: read status: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return statuspage.Status{}, fmt.Errorf("ops: read status from %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return statuspage.Status{}, fmt.Errorf("ops: read status from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return statuspage.Status{}, fmt.Errorf("ops: read status from %s: HTTP %d", url, resp.StatusCode)
	}
	var st statuspage.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return statuspage.Status{}, fmt.Errorf("ops: read status from %s: not a pool status: %w", url, err)
	}
	return st, nil
}

// WriteTable prints the status as plain tables: the pool, its slots, its PRs
// and its last warnings.
func WriteTable(w io.Writer, st statuspage.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	last := "none yet"
	if !st.LastCycle.IsZero() {
		last = Age(st.Now.Sub(st.LastCycle)) + " ago"
	}
	fmt.Fprintf(tw, "pool %s on %s (version %s, up %s)\n", st.Instance, st.Repo, st.Version, Age(st.Uptime()))
	fmt.Fprintf(tw, "forge %s  agent %s  last cycle %s\n", st.ForgeURL, st.AgentURL, last)
	fmt.Fprintf(tw, "\nSLOTS %d/%d busy\nPR\tKIND\tAGE\tSESSION\tTITLE\n", st.Busy(), st.Workers)
	for _, s := range st.Slots {
		kind := s.Kind
		if kind == "" {
			kind = "claiming"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", oneLine(statuspage.PRName(s.Repo, s.PR)), kind, Age(st.Now.Sub(s.Since)), dash(s.Session), oneLine(s.Title))
	}
	fmt.Fprintf(tw, "\nPRS %d\nPR\tSTATE\tATTEMPTS\tLAST ANSWER\tNEXT\n", len(st.PRs))
	for _, p := range st.PRs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", oneLine(statuspage.PRName(p.Repo, p.Number)), p.State, p.Attempts, dash(oneLine(p.LastAnswer)), oneLine(p.Next))
	}
	if len(st.Repos) > 0 {
		fmt.Fprintf(tw, "\nREPOSITORIES %d\nREPOSITORY\tSLOTS\tOPEN\tMERGED\n", len(st.Repos))
		for _, r := range st.Repos {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", oneLine(r.Repo), r.Busy, r.Open, r.Merged)
		}
		t := st.Total()
		fmt.Fprintf(tw, "total\t%d\t%d\t%d\n", t.Busy, t.Open, t.Merged)
	}
	fmt.Fprintf(tw, "\nWARNINGS %d\n", len(st.Warnings))
	for _, x := range st.Warnings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Time.UTC().Format("15:04:05"), x.Level, oneLine(x.Message), oneLine(x.Attrs))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a forge-written text (a title) from breaking the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
