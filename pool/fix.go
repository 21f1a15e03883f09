package pool

import (
	"context"
	"errors"
	"strings"

	"pool/clone"
	"pool/forge"
	"pool/texts"
)

// A fixer session commits in its work tree and pushes nothing: it holds no
// token that may push. When it ends, the pool reads its commits from the
// tree, checks them and pushes them as a fast-forward of the PR's own head
// branch, leased on the head the session was given, with the fixer
// account's token (clone.PushFix).

// fixFor is what a fixer session on pr may publish.
func (p *Pool) fixFor(pr forge.PR) *clone.Fix {
	repo := pr.HeadRepo
	if repo == "" {
		repo = p.cfg.Repo()
	}
	token := p.cfg.Fixers.Token
	if token == "" {
		token = p.cfg.Token
	}
	secrets := []string{p.cfg.Token, p.cfg.Fixers.Token, p.cfg.WebhookSecret, p.cfg.AgentPassword}
	for _, a := range p.cfg.AgentServers {
		secrets = append(secrets, a.Password)
	}
	return &clone.Fix{PR: pr.Number, Head: pr.HeadSHA, URL: p.cfg.ForgejoURL + "/" + repo + ".git", Branch: pr.HeadRef, Token: token,
		Secrets: secrets}
}

// markTree says, before a session starts in work tree dir, whether its
// commands run in the sandbox: a fixer's do.
func (p *Pool) markTree(dir string, fix bool) error {
	if p.fixes == nil || dir == "" {
		return nil
	}
	return p.fixes.MarkReviewer(dir, !fix)
}

// pushFix pushes what the fixer session s committed, before its work tree
// goes back. A fix the checks refuse is logged and noted on the PR.
func (p *Pool) pushFix(ctx context.Context, s followed) {
	if s.fix == nil || p.fixes == nil || s.Dir == "" {
		return
	}
	log := p.log.With("pr", s.PR, "session", s.ID)
	if pr, err := p.forge.PR(ctx, p.cfg.Owner, p.cfg.Name, s.PR); err == nil && (pr.State != "open" || pr.Merged) {
		// A fix has no PR to go to: pushed, it would land on the branch of
		// a closed or merged PR; noted, it says nothing anyone can act on.
		log.Info("the PR was closed or merged while the fixer ran; its commits are not pushed", "state", pr.State, "merged", pr.Merged)
		return
	}
	head, err := p.fixes.PushFix(ctx, s.Dir, *s.fix)
	var refused *clone.RefusedError
	switch {
	case errors.As(err, &refused):
		log.Warn("the fixer's commits were not pushed", "reason", refused.Reason)
		body := texts.FixRefused(refused.Reason)
		if err := p.noteOnce(ctx, s.PR, body, func(c string) bool { return strings.Contains(c, body) }); err != nil {
			log.Warn("noting the refused fix failed", "err", err)
		}
	case err != nil:
		log.Warn("pushing the fixer's commits failed", "err", err)
	case head == "":
		log.Info("the fixer committed nothing")
	default:
		log.Info("pushed the fixer's commits", "head", head, "repo", s.fix.URL, "branch", s.fix.Branch)
	}
}
