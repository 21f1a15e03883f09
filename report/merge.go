package report

import (
	"fmt"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// observation is the snapshot as lifecycle decides on it under policy p:
// the PR's own fields read as the supervisor reads them
// (lifecycle.Policy.Observe), its reviews, the head's checks and the base
// branch's protection. The report knows no claims and no session's hint:
// neither lets a PR merge.
func (s Snapshot) observation(p lifecycle.Policy) lifecycle.Observation {
	o := p.Observe(s.PR.PR, s.Owner+"/"+s.Repo, time.Now())
	o.Reviews = reviewsOf(s.Reviews)
	o.Checks = lifecycle.Checks(s.Statuses)
	o.Protection = s.Protection
	o.OpenDependencies = s.Dependencies
	return o
}

// MayMerge answers "may it merge now?" by the supervisor's rule
// (lifecycle.MayMerge) under policy p, skip label included: yes, or why
// not. A read the answer needs that failed (reviews, statuses, protection,
// dependencies) makes it an error.
func (s Snapshot) MayMerge(p lifecycle.Policy) (bool, string, error) {
	for _, err := range []error{s.ReviewsErr, s.StatusesErr, s.ProtectionErr, s.DependenciesErr} {
		if err != nil {
			return false, "", fmt.Errorf("may it merge: %w", err)
		}
	}
	ok, reason := lifecycle.MayMerge(p, s.observation(p))
	return ok, reason, nil
}

// readOnly is the supervisor's policy p as a read-only observer judges by
// it: it holds no key to check the marks of the pool's sessions, so the
// reviews of the accounts the rule counts count as if a session filed them.
func readOnly(p lifecycle.Policy) lifecycle.Policy {
	p.Rule.Sessions = false
	return p
}

// reviewsOf drops what only the report reads of each review.
func reviewsOf(details []forgejo.ReviewDetail) []forge.Review {
	reviews := make([]forge.Review, len(details))
	for i, r := range details {
		reviews[i] = r.Review
	}
	return reviews
}
