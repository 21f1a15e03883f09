package forge

import "strings"

// MergeOutcome is the forge's answer to a merge call, classified.
type MergeOutcome string

const (
	MergeDone      MergeOutcome = "merged"         // 200
	MergeScheduled MergeOutcome = "scheduled"      // 201, or 409 already scheduled
	MergeNotReady  MergeOutcome = "not_ready"      // 405 try again later / still checking
	MergeBlocked   MergeOutcome = "blocked"        // 405 not allowed, WIP, branch protection; 409 PushRejected; 423 archived
	MergeAlready   MergeOutcome = "already_merged" // 405 already merged
	MergeHeadMoved MergeOutcome = "head_moved"     // 409 head out of date
	MergeConflict  MergeOutcome = "conflict"       // 409 conflicts
	MergeClosed    MergeOutcome = "closed"         // 404
	MergeQuota     MergeOutcome = "quota"          // 413 the owner's storage quota is exceeded (Forgejo)
	MergeFailed    MergeOutcome = "failed"         // anything else
)

// MergeResult is the classified answer and what the forge said.
type MergeResult struct {
	Outcome MergeOutcome
	Status  int
	Message string
	// Rule names the rule a refusal (MergeBlocked, MergeQuota) cites, as
	// the branch protection's setting is named (RuleOutdated, ...), or
	// RuleUnknown; "" for an answer that is no refusal.
	Rule string
}

// The rules a merge refusal names. The forge's 405 message says which of
// the branch protection's checks failed (Gitea's and Forgejo's
// services/pull/merge.go: CheckPullBranchProtections).
const (
	RuleOutdated        = "block_on_outdated_branch"
	RuleStatusCheck     = "status_check"
	RuleApprovals       = "required_approvals"
	RuleRejected        = "block_on_rejected_reviews"
	RuleOfficialRequest = "block_on_official_review_requests"
	RuleProtectedFiles  = "protected_file_patterns"
	RuleSigned          = "require_signed_commits"
	RuleMergeWhitelist  = "merge_whitelist"
	RuleWorkInProgress  = "work_in_progress"
	RuleArchived        = "archived"
	RulePushRejected    = "push_rejected" // 409 PushRejected: a hook on the forge refused the merge's push
	RuleQuota           = "quota"
	RuleUnknown         = "unknown"
)

// The HTTP statuses of the merge answers, named here so that the leaf
// needs no net/http.
const (
	statusOK         = 200
	statusCreated    = 201
	statusNotFound   = 404
	statusNotAllowed = 405
	statusConflict   = 409
	statusQuota      = 413 // Request Entity Too Large: the owner's storage quota
	statusLocked     = 423
)

// refusalRules maps words of the forge's refusal to the rule.
var refusalRules = []struct{ words, rule string }{
	{"pushrejected", RulePushRejected}, // first: the hook's own words may name any other rule
	{"behind the base branch", RuleOutdated},
	{"status checks", RuleStatusCheck},
	{"enough approvals", RuleApprovals},
	{"requested changes", RuleRejected},
	{"official review requests", RuleOfficialRequest},
	{"protected files", RuleProtectedFiles},
	{"sign", RuleSigned},
	{"not allowed to merge", RuleMergeWhitelist},
	{"work in progress", RuleWorkInProgress},
	{"archived", RuleArchived},
}

// ClassifyMerge maps a merge answer to an outcome (FACTS: merge answers).
func ClassifyMerge(status int, message string) MergeOutcome {
	msg := strings.ToLower(message)
	switch status {
	case statusOK:
		return MergeDone
	case statusCreated:
		return MergeScheduled
	case statusNotFound:
		return MergeClosed
	case statusLocked:
		return MergeBlocked
	case statusQuota:
		return MergeQuota
	case statusNotAllowed:
		return classify405(msg)
	case statusConflict:
		return classify409(msg)
	}
	return MergeFailed
}

func classify405(msg string) MergeOutcome {
	switch {
	case strings.Contains(msg, "already merged"):
		return MergeAlready
	case strings.Contains(msg, "try again later"), strings.Contains(msg, "checking"):
		return MergeNotReady
	}
	return MergeBlocked
}

func classify409(msg string) MergeOutcome {
	switch {
	case strings.Contains(msg, "head out of date"):
		return MergeHeadMoved
	case strings.Contains(msg, "already scheduled"):
		return MergeScheduled
	case strings.Contains(msg, "pushrejected"):
		return MergeBlocked // a hook refused the push (Forgejo): no wait cures it
	case strings.Contains(msg, "push out of date"):
		return MergeNotReady
	}
	return MergeConflict
}

// RefusalRule names the rule a refused merge's answer (its HTTP status and
// message) cites.
func RefusalRule(status int, message string) string {
	if status == statusQuota {
		return RuleQuota
	}
	msg := strings.ToLower(message)
	for _, r := range refusalRules {
		if strings.Contains(msg, r.words) {
			return r.rule
		}
	}
	return RuleUnknown
}
