package configs

import "pool/lifecycle"

// Policy is the decision policy these settings give, skip label and update
// setting included: the supervisor decides by it, and `pool report`, `pool
// tick` and the digests of a session's open items judge by it too, so that
// they agree. It is built here and nowhere else.
func (c Config) Policy() lifecycle.Policy {
	return lifecycle.Policy{DiagnosticEvery: c.DiagnosticEvery, SkipLabel: c.SkipLabel, ChecksGrace: c.ChecksGrace,
		Rule: lifecycle.ReviewRule{Reviewers: c.Reviewers, AllowUnofficial: c.AllowUnofficial,
			Sessions: true, Humans: c.HumanReviewers},
		RetryBase: c.PollInterval, RetryMax: c.ClaimTTL,
		Update: lifecycle.UpdateMode(c.MergeUpdate), UpdateStyle: c.UpdateStyle,
		NoFixers: !c.Fixers.Enabled, FixForks: c.Fixers.Forks,
		BudgetPR: c.Reviews.PerPR, BudgetAuthor: c.Reviews.PerAuthor}
}
