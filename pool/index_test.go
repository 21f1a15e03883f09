package pool

import (
	"context"
	"testing"
	"time"
)

// TestSameSecondChangesAreNotMissed: the forge stamps updates in whole
// seconds. A PR read in the same second as a later change carries the same
// stamp; the index must read it again rather than trust its copy.
func TestSameSecondChangesAreNotMissed(t *testing.T) {
	second := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := newFakeForge(1, 2)
	f.now = func() time.Time { return second } // every stamp and the forge clock: one second
	for _, pr := range f.prs {
		pr.Updated = second
	}
	p, err := New(context.Background(), testConfig(1), Deps{Forge: f, Agent: newFakeAgent(nil), Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	// Within the same second: #1 gets a new head, #2 is merged.
	f.push(1, fakeSHA("sha-1-b"))
	f.mu.Lock()
	f.prs[2].Merged, f.prs[2].State = true, "closed"
	f.mu.Unlock()

	prs, err := p.listPRs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Number != 1 || prs[0].HeadSHA != fakeSHA("sha-1-b") {
		t.Errorf("open PRs after same-second changes = %+v, want only #1 at sha-1-b", prs)
	}

	// Once the forge's clock has moved on, an unchanged PR is not read again.
	second = second.Add(2 * time.Second)
	before := f.calls["pr"]
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.listPRs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls["pr"] - before; got > 1 {
		t.Errorf("quiet deltas read %d PRs, want at most 1 (the last re-read of the settled second)", got)
	}
}
