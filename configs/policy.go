package configs

import "pool/lifecycle"

// Policy is the decision policy these settings give: the supervisor decides
// by it, and `pool report` and `pool tick` judge by it too, so that the
// three agree (the skip label is SkipLabel, which lifecycle.Observe reads).
func (c Config) Policy() lifecycle.Policy {
	return lifecycle.Policy{DiagnosticEvery: c.DiagnosticEvery, ChecksGrace: c.ChecksGrace,
		Rule: lifecycle.ReviewRule{Reviewers: c.Reviewers, AllowUnofficial: c.AllowUnofficial,
			Sessions: true, Humans: c.HumanReviewers},
		RetryBase: c.PollInterval, RetryMax: c.ClaimTTL,
		Update: lifecycle.UpdateMode(c.MergeUpdate), UpdateStyle: c.UpdateStyle,
		NoFixers: !c.Fixers.Enabled, FixForks: c.Fixers.Forks,
		BudgetPR: c.Reviews.PerPR, BudgetAuthor: c.Reviews.PerAuthor}
}
