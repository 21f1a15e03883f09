package pool

import (
	"context"
	"reflect"
	"strings"
	"time"

	"pool/forge"
	"pool/lifecycle"
)

// followBase reads the repository again. It takes in its merge settings
// (takeMergeSettings) and follows a renamed default branch: the PRs into
// it are the ones decided and merged, its protection is read at once, and
// the clone fetches it. A failed read keeps the branch and the settings.
func (p *Pool) followBase(ctx context.Context) {
	repo, err := p.forge.Repository(ctx, p.cfg.Owner, p.cfg.Name)
	if err != nil {
		p.log.Warn("reading the repository failed; keeping its default branch and merge settings", "branch", p.Base(), "err", err)
		return
	}
	p.takeMergeSettings(repo.FastForwardOnly)
	base, old := repo.DefaultBranch, p.Base()
	if base == old {
		return
	}
	p.log.Warn("the default branch changed; following it", "from", old, "to", base)
	for _, c := range []any{p.trees, p.history} {
		if f, ok := c.(interface{ FollowBranch(string) }); ok {
			f.FollowBranch(base)
		}
	}
	p.base.Store(&base)
	p.protectionRead = time.Time{} // the new branch's rules, read now
	p.queue.restart()
}

// takeMergeSettings takes in a new reading of whether the repository
// allows fast-forward-only merges (trainsOn says what it makes of it). A
// change is logged; a change to allowed also forgets the forge's refusal
// of the style, as the setting it refused under is gone.
func (p *Pool) takeMergeSettings(ff forge.Setting) {
	p.mu.Lock()
	old := p.fastForward
	p.fastForward = ff
	p.mu.Unlock()
	if ff == old {
		return
	}
	p.log.Info("the repository's merge settings changed", "allow_fast_forward_only_merge", ff.String(), "was", old.String())
	if ff == forge.Yes {
		p.noFastForward.Store(false)
	}
}

// refreshProtection reads the base branch's protection again, unless it was
// read within the last poll interval. A failed read keeps the last one: the
// forge itself still enforces the rule it has.
func (p *Pool) refreshProtection(ctx context.Context) {
	if p.now().Sub(p.protectionRead) < p.cfg.PollInterval {
		return
	}
	prot, err := p.forge.Protection(ctx, p.cfg.Owner, p.cfg.Name, p.Base())
	if err != nil {
		p.log.Warn("reading the branch protection failed; keeping the last reading", "err", err)
		return
	}
	p.protectionRead = p.now()
	p.mu.Lock()
	changed := !reflect.DeepEqual(prot, p.protection)
	p.protection = prot
	p.mu.Unlock()
	if changed {
		p.rules++
		p.logProtection()
	}
}

// currentProtection is the last reading of the base branch's protection,
// with what the forge's refusals taught of the parts the token cannot read.
func (p *Pool) currentProtection() forge.Protection {
	p.mu.Lock()
	defer p.mu.Unlock()
	prot := p.protection
	for _, rule := range p.learned {
		prot, _ = lifecycle.Learn(prot, rule)
	}
	return prot
}

// learn takes in the rule a refused merge named, when the protection as
// read did not show it.
func (p *Pool) learn(rule string) {
	if _, isNew := lifecycle.Learn(p.currentProtection(), rule); !isNew {
		return
	}
	p.mu.Lock()
	p.learned = append(p.learned, rule)
	p.mu.Unlock()
	p.log.Warn("learned from a refused merge a rule of the branch protection the token cannot read", "branch", p.Base(), "rule", rule)
}

func (p *Pool) logProtection() {
	pr := p.currentProtection()
	p.log.Info("branch protection", "branch", p.Base(), "protected", pr.Protected, "rule", pr.Rule, "fully_read", pr.Full,
		"pool_may_merge", pr.UserCanMerge, "required_approvals", pr.RequiredApprovals,
		"required_contexts", lifecycle.RequiredContexts(pr))
	if unseen := lifecycle.Unreadable(pr); len(unseen) > 0 {
		p.log.Warn("the token cannot read the whole branch protection rule (it needs repository admin); "+
			"decisions use the branch summary, and the forge enforces the rest; the pool learns block_on_outdated_branch "+
			"from the forge's refusals, and carries an approval over its own update only where the forge shows it kept "+
			"(official, not stale, not dismissed)", "unseen", strings.Join(unseen, ","))
	}
}
