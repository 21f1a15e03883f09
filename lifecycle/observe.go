package lifecycle

import (
	"time"

	"pool/forge"
)

// Observe is the part of an Observation the PR itself shows, read under
// the policy: its state, head, author, base, whether it carries the skip
// label and where its head branch lives. repo is the base repository
// (owner/name). The supervisor and `pool report` both start from it, then
// add the reviews, the checks and the protection they read.
func (p Policy) Observe(pr forge.PR, repo string, now time.Time) Observation {
	return Observation{Open: pr.State == "open", Merged: pr.Merged, Updated: pr.Updated, HeadSHA: pr.HeadSHA,
		Author: pr.Author, Skip: p.Skips(pr), Mergeable: pr.Mergeable, Draft: pr.Draft,
		Behind: pr.Behind(), BaseSHA: pr.BaseSHA, MergeBase: pr.MergeBase,
		MayUpdate: pr.SameRepo(repo) || pr.MaintainerCanEdit, Fork: !pr.SameRepo(repo), Now: now}
}

// Skips reports whether the PR carries the label that leaves it to humans.
func (p Policy) Skips(pr forge.PR) bool { return p.SkipLabel != "" && pr.HasLabel(p.SkipLabel) }

// MayMerge answers "may it merge now?" from what the forge shows: whether
// Decide, with no memory of the PR, queues its merge, and if not, why. It
// is the answer of a supervisor that meets the PR for the first time, and
// the one `pool report` and `pool tick` give: the pool's memory (a
// conflict noted, a refusal backing off, the grace for a head without
// checks) can only hold a PR back further.
func MayMerge(p Policy, o Observation) (bool, string) {
	_, act := Decide(p, Track{}, o)
	return act.Kind == Merge, act.Reason
}
