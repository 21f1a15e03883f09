package pool

import (
	"context"
	"strings"
	"time"

	"pool/configs"
	"pool/forge"
	"pool/lifecycle"
)

// budgetDay is the window reviews.budget counts sessions in.
const budgetDay = 24 * time.Hour

// memberFor is how long an author's standing (collaborator or not) is
// believed before the forge is asked again.
const memberFor = time.Hour

// spending is what the budget counts: when each review session started,
// per PR and per author (lower case), for the last day; and what the
// forge said of each author's standing. Guarded by Pool.mu.
type spending struct {
	byPR     map[int][]time.Time
	byAuthor map[string][]time.Time
	members  map[string]standing
}

type standing struct {
	member bool
	read   time.Time
}

// spent records a review session started on pr at now.
func (p *Pool) spent(pr forge.PR, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spend.byPR == nil {
		p.spend.byPR, p.spend.byAuthor = map[int][]time.Time{}, map[string][]time.Time{}
	}
	for n, ts := range p.spend.byPR { // a day without a session forgets the PR
		if len(recent(ts, now)) == 0 {
			delete(p.spend.byPR, n)
		}
	}
	for a, ts := range p.spend.byAuthor {
		if len(recent(ts, now)) == 0 {
			delete(p.spend.byAuthor, a)
		}
	}
	author := strings.ToLower(pr.Author)
	p.spend.byPR[pr.Number] = append(recent(p.spend.byPR[pr.Number], now), now)
	p.spend.byAuthor[author] = append(recent(p.spend.byAuthor[author], now), now)
}

// recent keeps the times of the last day.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-budgetDay)) {
		i++
	}
	return ts[i:]
}

// budgetSpent reports whether the sessions started since pr was decided
// spent its budget or its author's.
func (p *Pool) budgetSpent(pr forge.PR) bool {
	var obs lifecycle.Observation
	p.counted(pr, &obs, p.now())
	return lifecycle.Withholds(p.policy, obs) != ""
}

// counted reads the label and the sessions of the last day into obs.
func (p *Pool) counted(pr forge.PR, obs *lifecycle.Observation, now time.Time) {
	obs.Allowed = pr.HasLabel(p.cfg.Reviews.AllowLabel)
	p.mu.Lock()
	defer p.mu.Unlock()
	obs.PRSessions = len(recent(p.spend.byPR[pr.Number], now))
	obs.AuthorSessions = len(recent(p.spend.byAuthor[strings.ToLower(pr.Author)], now))
}

// observeBudget reads what decides whether the PR may have a review
// session: the maintainer's label, the sessions of the last day, and,
// under reviews.authors collaborators, whether its author is one.
func (p *Pool) observeBudget(ctx context.Context, pr forge.PR, obs *lifecycle.Observation) error {
	now := p.now()
	p.counted(pr, obs, now)
	if obs.Allowed || p.cfg.Reviews.Authors == configs.AuthorsAnyone {
		return nil
	}
	member, err := p.member(ctx, pr.Author, now)
	obs.Outsider = !member
	return err
}

// member reports whether author is a collaborator of the repository or a
// member of its organisation, as the forge said within memberFor.
func (p *Pool) member(ctx context.Context, author string, now time.Time) (bool, error) {
	key := strings.ToLower(author)
	p.mu.Lock()
	s, ok := p.spend.members[key]
	p.mu.Unlock()
	if ok && now.Sub(s.read) < memberFor {
		return s.member, nil
	}
	member, err := p.forge.IsCollaborator(ctx, p.cfg.Owner, p.cfg.Name, author)
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spend.members == nil {
		p.spend.members = map[string]standing{}
	}
	for a, s := range p.spend.members {
		if now.Sub(s.read) >= memberFor {
			delete(p.spend.members, a)
		}
	}
	p.spend.members[key] = standing{member: member, read: now}
	return member, nil
}
