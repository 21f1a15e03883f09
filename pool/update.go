package pool

import (
	"context"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// update updates a PR the merge queue reached that is approved, green
// and only behind its base, unless another PR of the base is being updated
// (one at a time: updating every PR after each merge would start CI runs
// that all go stale at the next merge). The update is recorded after the
// forge answered that it made it; the PR leaves the queue, and the
// discovery loop takes its new head (whose approval carries over, or which
// is reviewed again) through its checks back to the queue.
func (m *merger) update(ctx context.Context, pr forge.PR) {
	p := m.p
	if other := p.updatingOther(pr.Number); other != 0 {
		p.log.Debug("merge queue: another PR of the base is being updated; waiting", "pr", pr.Number, "updating", other)
		m.q.notReady(pr.Number, p.now())
		return
	}
	style := p.updateStyle()
	diff, err := m.approvedDiff(ctx, pr, style)
	if err != nil {
		p.log.Warn("merge queue: reading the PR's diff before its update failed; waiting", "pr", pr.Number, "err", err)
		m.q.backOff(pr.Number, p.now(), err)
		return
	}
	res, err := p.forge.Update(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, style)
	if err != nil && res.Status < 500 { // a 5xx is an answer: a refusal that backs off (AGit PRs get it every time)
		p.log.Warn("merge queue: the update call failed; waiting", "pr", pr.Number, "err", err)
		m.q.backOff(pr.Number, p.now(), err)
		return
	}
	p.log.Info("update answered", "pr", pr.Number, "outcome", res.Outcome, "status", res.Status, "style", style, "base", pr.BaseSHA)
	m.afterUpdate(ctx, pr, res, style, diff)
	m.handBack(pr) // read before the update: the loop waits for the forge to show the new head
}

// afterUpdate folds the forge's answer to an update into the track, and
// posts the note it asks for.
func (m *merger) afterUpdate(ctx context.Context, pr forge.PR, res forgejo.UpdateResult, style, diff string) {
	produced := ""
	if res.Outcome == forgejo.UpdateDone {
		m.p.metrics.HeadUpdated()
		produced = m.producedHead(ctx, pr)
	}
	next, act, ok := m.p.updateAnswered(pr, res, style, diff, produced)
	if !ok {
		return
	}
	m.p.logDecision(pr.Number, next, act)
	m.say(ctx, pr, next, act)
}

// producedHead reads the PR's head right after the forge answered that it
// updated it from pr.HeadSHA: the one commit the approval may carry over
// to (lifecycle.CarriesOver). "" when the read fails or shows no new head:
// then whatever head comes next is reviewed again.
func (m *merger) producedHead(ctx context.Context, pr forge.PR) string {
	fresh, err := m.p.forge.PR(ctx, m.p.cfg.Owner, m.p.cfg.Name, pr.Number)
	switch {
	case err != nil:
		m.p.log.Warn("reading the head the update made failed; the next head is reviewed again", "pr", pr.Number, "err", err)
		return ""
	case fresh.HeadSHA == pr.HeadSHA:
		m.p.log.Warn("the forge showed no new head right after the update; the next head is reviewed again", "pr", pr.Number)
		return ""
	}
	return fresh.HeadSHA
}

// approvedDiff is the hash of the PR's diff at the approved head, which a
// rebase must keep byte for byte for the approval to carry over.
func (m *merger) approvedDiff(ctx context.Context, pr forge.PR, style string) (string, error) {
	if style != "rebase" {
		return "", nil
	}
	return m.p.forge.DiffHash(ctx, m.p.cfg.Owner, m.p.cfg.Name, pr.Number)
}

func (p *Pool) updateStyle() string {
	if p.cfg.UpdateStyle == "" {
		return "merge"
	}
	return p.cfg.UpdateStyle
}

// updateHolder returns the PR of the base that holds its one update
// (lifecycle.UpdateHolder), or 0.
func (p *Pool) updateHolder() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return lifecycle.UpdateHolder(p.tracks)
}

// updatingOther returns the PR of the base that holds its one update
// (lifecycle.UpdateHolder) if it is another than n, or 0.
func (p *Pool) updatingOther(n int) int {
	if holder := p.updateHolder(); holder != n {
		return holder
	}
	return 0
}
