package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"pool/forge"
	"pool/texts"
	"slices"
	"time"

	"pool/agent"
	"pool/claims"
	"pool/clone"
	"pool/forgejo"
	"pool/internal/guard"
	"pool/internal/retry"
	"pool/lifecycle"
	"pool/report"
	"pool/sessionmark"
	"pool/sessions"
)

// runSlot takes one PR from claim to collected result. ctx ends at shutdown;
// work outlives it by the shutdown timeout.
func (p *Pool) runSlot(ctx, work context.Context, c candidate) {
	log := p.log.With("pr", c.pr.Number)
	// The work tree is made, and the claims read, while the PR is re-read,
	// and the tree while the claim is posted and verified: the clone is
	// this pool's alone, and a tree no session got goes back.
	tree := p.takeTree(work, c.pr)
	read := p.readClaims(work, c.pr)
	pr, ok, err := p.confirm(work, c)
	if err != nil || !ok {
		if err != nil {
			log.Warn("re-checking before dispatch failed", "err", err)
		}
		<-read
		p.unusedTree(work, tree)
		return
	}
	// Reviewers and fixers alike work under a claim, so that two pools never
	// start either for one head.
	if won, err := p.claim(work, pr, read); err != nil || !won {
		if err != nil {
			log.Warn("claiming failed", "err", err)
		}
		p.unusedTree(work, tree)
		return
	}
	if ctx.Err() != nil {
		p.unusedTree(work, tree)
		return // shutting down: keep the claim, start nothing
	}
	s, err := p.dispatch(work, pr, c.kind, tree)
	if err != nil {
		log.Warn("starting a session failed; backing off", "err", err)
		p.sessionNotStarted(pr.Number)
		return
	}
	p.follow(ctx, work, s)
}

// confirm re-reads the PR so a slot never acts on a stale work list.
func (p *Pool) confirm(ctx context.Context, c candidate) (forge.PR, bool, error) {
	pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, c.pr.Number)
	if err != nil {
		return pr, false, err
	}
	if pr.HeadSHA != c.pr.HeadSHA || pr.State != "open" || pr.Merged {
		return pr, false, nil // the next cycle will see what changed
	}
	if c.kind == lifecycle.Review && p.budgetSpent(pr) {
		return pr, false, nil // sessions started since the decision spent it: the next one notes it
	}
	return pr, true, nil
}

// claim posts this pool's claim unless it already holds one, then verifies:
// the lowest live claim id wins, and a loser deletes its own claim. first
// is the claims read at pr's head before.
func (p *Pool) claim(ctx context.Context, pr forge.PR, first <-chan viewResult) (bool, error) {
	r := <-first
	v, err := r.view, r.err
	if err != nil {
		return false, err
	}
	switch verdict, held := claims.Judge(v, p.instance); verdict {
	case forge.ClaimTaken:
		return false, nil
	case forge.ClaimOurs:
		// A claim an earlier session of this head left: renewed now, so
		// that it lives a whole claim's life from this session's start
		// (follow renews it next after half of it). Unrenewed, another pool
		// took the head over while the session ran
		// (TestARetriedSessionRenewsItsClaim).
		if err := p.renewClaim(ctx, pr.Number, held); err != nil {
			return false, err
		}
		if v, err = p.claimView(ctx, pr); err != nil {
			return false, err
		}
		if tookOver(v, p.instance) {
			// The claim was stale by the time the renewal landed, and
			// another pool took the head over: it holds the head
			// (TestARenewalLateForAStaleClaimYieldsToTheTakeover).
			p.lostClaim(pr.Number, p.now().Add(p.cfg.PollInterval))
			return false, p.takeBack(ctx, held.CommentID)
		}
		return true, p.deleteLosers(ctx, v)
	}
	cl := claims.Claim{Instance: p.instance, SHA: pr.HeadSHA, At: p.now().UTC(), Takeover: p.takenOver(v)}
	before := v
	posted, err := p.forge.PostComment(ctx, p.cfg.Owner, p.cfg.Name, pr.Number, texts.Sign(claims.Body(cl)))
	if err != nil {
		return false, errors.Join(err, p.takeBackClaim(ctx, pr, before, 0))
	}
	if v, err = p.claimView(ctx, pr); err != nil {
		return false, errors.Join(err, p.takeBackClaim(ctx, pr, before, posted.ID))
	}
	verdict, winner := claims.Judge(v, p.instance)
	p.metrics.ClaimRace(verdict == forge.ClaimOurs)
	if verdict != forge.ClaimOurs {
		p.log.Info("lost the claim; yielding", "pr", pr.Number, "winner", winner.Instance)
		// no hot loop of claim and retreat
		p.lostClaim(pr.Number, p.now().Add(p.cfg.PollInterval))
		return false, p.deleteLosers(ctx, v)
	}
	return true, p.deleteLosers(ctx, v)
}

// takeBackClaim deletes the claim this pool posted on pr but could not
// verify: comment id, or, when the post's answer was lost (id 0), its live
// claims the view before the post did not hold. Unverified, the claim may
// have lost a race, and left it would stand beside the winner's for a
// claim's life (TestAnUnverifiedClaimIsTakenBack).
func (p *Pool) takeBackClaim(ctx context.Context, pr forge.PR, before claims.View, id int64) error {
	if id != 0 {
		return p.takeBack(ctx, id)
	}
	var v claims.View
	err := tryAgain(ctx, func() (err error) {
		v, err = p.claimView(ctx, pr)
		return err
	})
	if err != nil {
		return err
	}
	for _, cl := range claims.Live(v) {
		known := slices.ContainsFunc(claims.Live(before), func(b claims.Claim) bool { return b.CommentID == cl.CommentID })
		if cl.Instance == p.instance && !known {
			if err := p.takeBack(ctx, cl.CommentID); err != nil {
				return err
			}
		}
	}
	return nil
}

// tookOver reports whether a live claim of another instance took the head
// over from instance's stale claim.
func tookOver(v claims.View, instance string) bool {
	return slices.ContainsFunc(claims.Live(v), func(cl claims.Claim) bool {
		return cl.Instance != instance && cl.Takeover == instance
	})
}

// deleteLosers removes this instance's live claims that do not win.
func (p *Pool) deleteLosers(ctx context.Context, v claims.View) error {
	for _, cl := range claims.Losers(v, p.instance) {
		if err := p.takeBack(ctx, cl.CommentID); err != nil {
			return err
		}
	}
	return nil
}

// dispatch starts a session in a new work tree at the PR's head and
// registers it with the watcher. A session it made but could not prompt is
// deleted, now or, if the agent server does not answer, later.
func (p *Pool) dispatch(ctx context.Context, pr forge.PR, kind lifecycle.Kind, tree <-chan treeResult) (followed, error) {
	in := texts.PromptInput{PR: pr.Number, Repo: p.cfg.Repo(), Head: pr.HeadSHA, Spec: p.spec, Tag: texts.NewTag(),
		Reviewed: p.track(pr.Number).ReviewedSHA != "", Fix: kind == lifecycle.Fix, Base: p.Base(), Rule: p.policy.Rule,
		PushRepo: pr.HeadRepo, PushBranch: pr.HeadRef,
		Data: texts.Data{Target: fmt.Sprintf("%s#%d", p.cfg.Repo(), pr.Number)}}
	if in.Fix {
		history, err := p.forge.StatusHistory(ctx, p.cfg.Owner, p.cfg.Name, pr.HeadSHA)
		if err != nil {
			p.unusedTree(ctx, tree)
			return followed{}, err
		}
		in.Data.Checks = lifecycle.Failing(lifecycle.Checks(history))
	}
	items := p.openItems(ctx, pr.Number, in.Reviewed || in.Fix)
	if items != nil {
		in.Answer = items.AnswerInstructions()
		in.Data.Items, in.Data.Errors = items.Items, items.Errors
	}
	t := <-tree
	if t.err != nil {
		return followed{}, t.err
	}
	if err := p.markTree(t.dir, in.Fix); err != nil {
		p.sessions.GiveTree(ctx, t.dir)
		return followed{}, err
	}
	in.Dir = t.dir
	started, err := p.sessions.Start(ctx, pr.Number, kind, texts.SessionTitle(p.cfg.Repo(), pr.Number), in.Dir, p.cfg.AgentName, texts.Prompt(in),
		p.recordSession(pr, in.Dir, in.Fix))
	if err != nil {
		return followed{}, err
	}
	s := followed{Session: started, items: items, head: pr.HeadSHA}
	if in.Fix {
		s.fix = p.fixFor(pr)
	}
	p.metrics.SessionStarted(string(kind))
	if !in.Fix {
		p.spent(pr, p.now())
	}
	p.book.Signal()
	if in.Fix {
		p.fixerStarted(pr.Number, pr.HeadSHA)
		p.mu.Lock()
		p.stats.ciFixes++
		p.mu.Unlock()
	}
	p.log.Info("session started", "pr", pr.Number, "session", s.ID, "kind", kind, "head", pr.HeadSHA, "dir", s.Dir)
	return s, nil
}

// recordSession writes, before the session in dir is prompted, what it
// may act on (sessionmark): pool-review refuses any other PR or head, and
// marks its reviews so that the pool counts them (vouch); and whether it is
// a fixer's, whose commits the pool pushes, also once a restart adopted it.
func (p *Pool) recordSession(pr forge.PR, dir string, fix bool) func(id string) error {
	if p.trees == nil || dir == "" {
		return nil
	}
	return func(id string) error {
		return p.trees.RecordSession(dir, sessionmark.Record{Repo: p.cfg.Repo(), PR: pr.Number, Head: pr.HeadSHA, Base: pr.BaseRef, Session: id,
			Mark: p.marks.Mark(p.cfg.Repo(), pr.Number, pr.HeadSHA, id), Fixer: fix})
	}
}

// followed is a session the pool follows, with the open review items it
// was given, if any, and for a fixer what the pool may push.
type followed struct {
	*sessions.Session
	items *report.Digest
	fix   *clone.Fix
	head  string // the head its claim names
}

// follow waits for a session to end, then collects it. At shutdown it leaves
// the session running, in its work tree, for the next start to adopt, or
// aborts it. While the session runs, which may be longer than a claim
// lives, it refreshes the session's claim every half of the claim's life
// (keepClaim), so that no other pool takes the PR over and starts a second
// session for the head.
func (p *Pool) follow(ctx, work context.Context, s followed) {
	refresh := time.NewTimer(p.cfg.ClaimTTL / 2)
	defer refresh.Stop()
	for {
		select {
		case <-s.Done():
			p.collect(work, s)
			return
		case <-ctx.Done():
			p.sessions.Leave(work, s.Session, p.cfg.AbortOnExit)
			return
		case <-refresh.C:
			next := p.cfg.ClaimTTL / 2
			if err := p.keepClaim(ctx, s.PR, s.head); err != nil {
				p.log.Warn("refreshing the claim failed; trying again soon", "pr", s.PR, "err", err)
				next = p.cfg.ClaimTTL / 10
			}
			refresh.Reset(next)
		}
	}
}

// keepClaim refreshes this pool's live claim on PR n's head by an edit of
// its comment, which moves the comment's update time; it claims the head
// again if its claim went stale. Another pool's live claim it leaves alone.
func (p *Pool) keepClaim(ctx context.Context, n int, head string) error {
	comments, err := p.forge.Comments(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err != nil {
		return err
	}
	v := p.view(forge.PR{HeadSHA: head}, comments, nil)
	verdict, cl := claims.Judge(v, p.instance)
	switch verdict {
	case forge.ClaimTaken:
		p.log.Warn("another pool holds the claim on the head a session of this pool works on", "pr", n, "holder", cl.Instance)
		return nil
	case forge.ClaimFree:
		cl = claims.Claim{Instance: p.instance, SHA: head, At: p.now().UTC(), Takeover: p.takenOver(v)}
		_, err = p.comment(ctx, n, claims.Body(cl))
		return err
	}
	return p.renewClaim(ctx, n, cl)
}

// renewClaim edits this pool's claim, which moves the comment's update
// time: its life starts over.
func (p *Pool) renewClaim(ctx context.Context, n int, cl claims.Claim) error {
	cl.Refreshed = p.now().UTC()
	_, err := p.forge.EditComment(ctx, p.cfg.Owner, p.cfg.Name, cl.CommentID, texts.Sign(claims.Body(cl)))
	return err
}

// takenOver names the newest stale claim of another instance that a new
// claim replaces, or "". This pool's own claim gone stale (a refresh came
// late on a slow forge) is no takeover.
func (p *Pool) takenOver(v claims.View) string {
	for _, cl := range claims.Stale(v) {
		if cl.Instance != p.instance {
			return cl.Instance
		}
	}
	return ""
}

// collect reads a finished session's result, deletes the session and its
// work tree, and hands the PR back to the discovery loop: it records the
// session's end, and the loop's next decision on the PR judges it (its
// slot, freed, wakes the loop). The result is a hint.
func (p *Pool) collect(ctx context.Context, s followed) {
	defer p.sessions.Drop(s.Session)
	res, text := p.result(ctx, s.Session)
	p.pushFix(ctx, s)
	p.sessions.Release(ctx, s.ID, s.Dir)
	p.count(s.PR, &p.stats.reviewed)
	p.metrics.SessionFinished(s.Outcome())
	log := p.log.With("pr", s.PR, "session", s.ID)
	if res == texts.Unknown {
		log.Warn("session gave no usable result; the forge decides", "outcome", s.Outcome(), "tail", tail(text, 200))
	} else {
		log.Info("session finished", "outcome", s.Outcome(), "decision", res.Decision, "merge_status", res.MergeStatus)
	}
	p.logItems(ctx, s)
	if res.MergeStatus == "merged" {
		p.checkMergedClaim(ctx, s.PR, log)
	}
	p.sessionEnded(s.PR, res.MergeStatus, s.Outcome() == sessions.OutcomeIdle)
}

// checkMergedClaim logs a reviewer's report that it merged the PR which
// the forge contradicts. The forge wins.
func (p *Pool) checkMergedClaim(ctx context.Context, n int, log *slog.Logger) {
	pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
	if err == nil && !pr.Merged {
		log.Warn("reviewer reported merged but the forge says not merged; the forge wins", "forge_merged", pr.Merged)
	}
}

// result reads the session's final assistant text and parses it.
func (p *Pool) result(ctx context.Context, s *sessions.Session) (texts.Result, string) {
	msgs, err := p.agent.Messages(ctx, s.ID)
	if err != nil {
		p.log.Warn("reading session messages failed", "session", s.ID, "err", err)
		return texts.Unknown, ""
	}
	_, text, _ := agent.Finished(msgs)
	return texts.ParseResult(text), text
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// adopt takes over sessions a previous run left for open PRs of this repo.
// Only titles naming this repository (or the old form naming none) count:
// a pool of another repository on the same agent server may hold a
// session for a PR with the same number. A session whose PR or claims
// cannot be read is never abandoned for it: its PR is held, so that no
// second session starts for it, its tree is kept, and the reads are tried
// again (adoptLater).
func (p *Pool) adopt(ctx, work context.Context) error {
	sessions, err := p.agent.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("list agent sessions: %w", err)
	}
	var keep []string
	defer func() { p.sessions.PruneTrees(ctx, keep) }()
	for _, s := range sessions {
		n, ok := texts.TitlePR(s.Title, p.cfg.Repo(), !p.shared)
		if !ok || p.isBusy(n) {
			continue
		}
		pr, mine, err := p.mayAdopt(ctx, n)
		if err != nil {
			p.log.Warn("reading the PR of a session left running failed; holding the PR and reading again", "pr", n, "session", s.ID, "err", err)
			p.holdSlot(n)
			keep = append(keep, s.Directory)
			p.workers.Add(1)
			guard.Go(ctx, p.log, "adoption", func() {
				defer p.workers.Done()
				p.adoptLater(ctx, work, s, n)
			})
			continue
		}
		if mine && p.takeOver(ctx, s, n) {
			keep = append(keep, s.Directory)
			p.workers.Add(1)
			guard.Go(ctx, p.log, "adopted session", func() {
				defer p.workers.Done()
				defer p.releaseSlot(n)
				p.followAdopted(ctx, work, n, pr)
			})
		}
	}
	return nil
}

// followAdopted renews the claim of a session a restart took over, then
// follows the session: follow's first renewal comes half a claim's life
// later, when a claim posted before the restart may have gone stale and the
// head be claimed a second time, or by another pool
// (TestAnAdoptedSessionRenewsItsClaim: 2 claims on the head).
func (p *Pool) followAdopted(ctx, work context.Context, n int, pr forge.PR) {
	if err := p.keepClaim(ctx, n, pr.HeadSHA); err != nil {
		p.log.Warn("renewing an adopted session's claim failed; the follower tries again", "pr", n, "err", err)
	}
	p.follow(ctx, work, p.adopted(n, pr))
}

// adopted is the session a restart took over for pr, to follow: a fixer's
// (its record says so, which the pool wrote where the session cannot) gets
// the fix fixFor gives, leased on the head the session was given, so that
// its commits are pushed as those of a fixer of this run are.
func (p *Pool) adopted(n int, pr forge.PR) followed {
	s := followed{Session: p.sessions.Of(n), head: pr.HeadSHA}
	if p.fixes == nil || p.trees == nil || s.Dir == "" {
		return s
	}
	log := p.log.With("pr", n, "session", s.ID)
	rec, err := p.trees.SessionRecord(s.Dir)
	switch {
	case errors.Is(err, sessionmark.ErrNoRecord):
		return s // a session of a pool that wrote none: a reviewer's
	case err != nil:
		log.Warn("reading the adopted session's record failed; its commits, if any, are not pushed", "err", err)
		return s
	case !rec.Fixer:
		return s
	case rec.Repo != p.cfg.Repo() || rec.PR != n || rec.Session != s.ID:
		log.Warn("the adopted session's tree records another session; its commits are not pushed", "record", fmt.Sprintf("%s#%d %s", rec.Repo, rec.PR, rec.Session))
		return s
	case p.policy.NoFixers || (!pr.SameRepo(p.cfg.Repo()) && !p.policy.FixForks):
		log.Info("the adopted fixer's commits are not pushed: fixers are off, or not for this PR's head repository (fixers.enabled, fixers.forks)")
		return s
	}
	s.fix = p.fixFor(pr)
	s.fix.Head = rec.Head
	return s
}

// mayAdopt reads whether a session left for PR n may be this pool's: the
// PR is open on the default branch and no other live pool holds it (a
// shared agent server); and the PR. An error is a read that failed.
func (p *Pool) mayAdopt(ctx context.Context, n int) (forge.PR, bool, error) {
	pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, n)
	if errors.Is(err, forgejo.ErrNotFound) {
		return forge.PR{}, false, nil
	}
	if err != nil {
		return forge.PR{}, false, err
	}
	if pr.State != "open" || pr.BaseRef != p.Base() {
		return forge.PR{}, false, nil
	}
	verdict, err := p.judgeClaims(ctx, pr)
	return pr, verdict != forge.ClaimTaken, err
}

// takeOver registers a session left for PR n and holds its PR; false for
// one never prompted (killed between creating and prompting it: nothing
// runs there), which it removes, and whose PR is dispatched as usual.
func (p *Pool) takeOver(ctx context.Context, s agent.Session, n int) bool {
	if !p.sessions.WasPrompted(ctx, s.ID) {
		p.log.Info("removing a session that was never prompted", "pr", n, "session", s.ID)
		p.sessions.Release(ctx, s.ID, s.Directory)
		return false
	}
	p.holdSlot(n)
	if f, ok := p.agent.(placement); ok {
		f.Hold(s.ID)
	}
	p.sessions.Register(s.ID, n, lifecycle.Review, s.Directory)
	p.log.Info("adopted a running session", "pr", n, "session", s.ID)
	return true
}

// adoptLater reads again, with a back-off, whether the session left for
// PR n, whose PR adopt holds, is this pool's; then follows it or lets the
// PR go.
func (p *Pool) adoptLater(ctx, work context.Context, s agent.Session, n int) {
	defer p.releaseSlot(n)
	for failures := 1; ; failures++ {
		if !retry.Wait(ctx, retryWait(failures, p.cfg.PollInterval, 10*time.Minute, nil)) {
			return // shutting down: the session is left as it was found
		}
		pr, mine, err := p.mayAdopt(ctx, n)
		if err != nil {
			continue
		}
		if mine && p.takeOver(ctx, s, n) {
			p.followAdopted(ctx, work, n, pr)
		}
		return
	}
}

// openItems reads the PR's open review items for a re-review or fixer
// prompt. A failure costs only the list, never the session.
func (p *Pool) openItems(ctx context.Context, n int, wanted bool) *report.Digest {
	if !wanted || p.digests == nil {
		return nil
	}
	d, err := p.digests.Digest(ctx, n)
	if err != nil {
		p.log.Warn("reading open items failed; prompting without them", "pr", n, "err", err)
		return nil
	}
	if len(d.Items) == 0 {
		return nil
	}
	return &d
}

// logItems ticks again after a session that was given open items, and logs
// which the forge no longer shows and which remain.
func (p *Pool) logItems(ctx context.Context, s followed) {
	if s.items == nil {
		return
	}
	after, err := p.digests.Digest(ctx, s.PR)
	if err != nil {
		p.log.Warn("re-reading open items failed", "pr", s.PR, "err", err)
		return
	}
	gone, remaining, _ := report.Diff(*s.items, after)
	p.log.Info("open items after the session", "pr", s.PR, "gone", tokens(gone), "remaining", tokens(remaining))
}

func tokens(items []forge.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Answers
	}
	return out
}
