package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pool/agent"
	"pool/configs"
	"pool/forge"
	"pool/forgejo"
	"pool/pool"
)

// readForge is a forge with two open PRs, #1 approved but depending on an
// open issue and #2 never reviewed, that records every write. Methods a run must not call are
// left to the embedded nil interface: calling one panics.
type readForge struct {
	pool.Forge
	mu     sync.Mutex
	writes []string
}

func (f *readForge) wrote(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, fmt.Sprintf(format, args...))
}

func (f *readForge) pr(n int) forge.PR {
	return forge.PR{Number: n, State: "open", Mergeable: true, HeadSHA: fmt.Sprintf("h%d", n), BaseRef: "main",
		Author: "author", HeadRepo: "o/r", Updated: time.Unix(1, 0)}
}

func (f *readForge) Me(context.Context) (string, error) { return "pool-bot", nil }
func (f *readForge) IsCollaborator(context.Context, string, string, string) (bool, error) {
	return true, nil
}
func (f *readForge) Repository(context.Context, string, string) (forge.Repository, error) {
	return forge.Repository{DefaultBranch: "main", FastForwardOnly: forge.Yes}, nil
}
func (f *readForge) Protection(context.Context, string, string, string) (forge.Protection, error) {
	return forge.Protection{UserCanMerge: true}, nil
}
func (f *readForge) OpenPRs(context.Context, string, string) ([]forge.PR, error) {
	return []forge.PR{f.pr(1), f.pr(2)}, nil
}
func (f *readForge) ChangedPRs(context.Context, string, string, time.Time) ([]forgejo.PRChange, time.Time, error) {
	return nil, time.Now(), nil
}
func (f *readForge) PR(_ context.Context, _, _ string, n int) (forge.PR, error) {
	return f.pr(n), nil
}
func (f *readForge) Comments(context.Context, string, string, int) ([]forge.Comment, error) {
	return nil, nil
}
func (f *readForge) Reviews(_ context.Context, _, _ string, n int) ([]forge.Review, error) {
	if n != 1 {
		return nil, nil
	}
	return []forge.Review{{ID: 1, Author: "reviewer", State: forge.ReviewApproved, CommitID: "h1", Official: true}}, nil
}
func (f *readForge) StatusHistory(context.Context, string, string, string) ([]forge.Status, error) {
	return nil, nil
}
func (f *readForge) OpenDependencies(_ context.Context, _, _ string, n int) ([]string, error) {
	if n == 1 {
		return []string{"#9"}, nil // a note says so
	}
	return nil, nil
}
func (f *readForge) PostComment(_ context.Context, _, _ string, n int, body string) (forge.Comment, error) {
	f.wrote("#%d: comment %q", n, body)
	return forge.Comment{}, nil
}
func (f *readForge) Merge(_ context.Context, _, _ string, n int, _ forgejo.MergeOptions) (forge.MergeResult, error) {
	f.wrote("#%d: merge", n)
	return forge.MergeResult{Outcome: forge.MergeDone, Status: 200}, nil
}

// idleAgent is an agent server with the pool's agent and no session.
type idleAgent struct{ pool.Agent }

func (idleAgent) Agents(context.Context, string) ([]string, error)  { return []string{"reviewer"}, nil }
func (idleAgent) OpenToAnyone(context.Context) (bool, error)        { return false, nil }
func (idleAgent) Sessions(context.Context) ([]agent.Session, error) { return nil, nil }
func (idleAgent) Statuses(context.Context, string) (map[string]agent.Status, error) {
	return nil, nil
}

// TestDryRunWritesNothing: a dry run of a repository, wired as serve wires
// it, decides on what the forge shows and writes nothing: no forge write,
// and nothing under the state dir (no store, no clone).
func TestDryRunWritesNothing(t *testing.T) {
	cfg := configs.Default()
	cfg.ForgejoURL, cfg.Token, cfg.Owner, cfg.Name = "http://forge.test", "t", "o", "r"
	cfg.AgentURL, cfg.AgentName, cfg.Workers, cfg.InstanceID = "http://agent.test", "reviewer", 2, "pool-test"
	cfg.PollInterval, cfg.IdleExit, cfg.ShutdownTimeout, cfg.ChecksGrace = 10*time.Millisecond, 3, time.Second, 0
	cfg.StateDir, cfg.DryRun = filepath.Join(t.TempDir(), "state"), true
	f := &readForge{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	r, err := openRepo(ctx, cfg, pool.Deps{Forge: f, Agent: idleAgent{}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(ctx, nil, log, false); err != nil {
		t.Fatal(err)
	}
	r.close(log)
	if len(f.writes) != 0 {
		t.Errorf("dry run wrote to the forge: %v", f.writes)
	}
	if _, err := os.Stat(cfg.StateDir); !os.IsNotExist(err) {
		t.Errorf("dry run made the state dir %s (stat: %v)", cfg.StateDir, err)
	}
}
