package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// MergeOutcome is the forge's answer to a merge call, classified.
type MergeOutcome string

const (
	MergeDone      MergeOutcome = "merged"         // 200
	MergeScheduled MergeOutcome = "scheduled"      // 201, or 409 already scheduled
	MergeNotReady  MergeOutcome = "not_ready"      // 405 try again later / still checking
	MergeBlocked   MergeOutcome = "blocked"        // 405 not allowed, WIP, branch protection; 423 archived
	MergeAlready   MergeOutcome = "already_merged" // 405 already merged
	MergeHeadMoved MergeOutcome = "head_moved"     // 409 head out of date
	MergeConflict  MergeOutcome = "conflict"       // 409 conflicts
	MergeClosed    MergeOutcome = "closed"         // 404
	MergeQuota     MergeOutcome = "quota"          // 413 the owner's storage quota is exceeded (Forgejo)
	MergeFailed    MergeOutcome = "failed"         // anything else
)

// MergeOptions are the knobs of one merge call.
type MergeOptions struct {
	Style string // merge, rebase, rebase-merge, squash, fast-forward-only
	// HeadSHA pins the merge: the forge refuses if the head has moved.
	HeadSHA string
	// WhenChecksSucceed schedules an auto-merge instead of merging now.
	WhenChecksSucceed bool
}

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
	RuleQuota           = "quota"
	RuleUnknown         = "unknown"
)

// refusalRules maps words of the forge's refusal to the rule.
var refusalRules = []struct{ words, rule string }{
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

// RefusalRule names the rule a refused merge's answer cites.
func RefusalRule(status int, message string) string {
	if status == http.StatusRequestEntityTooLarge {
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

// Merge asks the forge to merge a PR. It uses plain HTTP because the SDK
// drops the status and body that tell the outcomes apart. Whatever it
// answers, callers re-read the PR: a failed branch deletion after a
// successful merge still answers an error.
func (c *Client) Merge(ctx context.Context, owner, repo string, n int, opt MergeOptions) (MergeResult, error) {
	op := fmt.Sprintf("merge %s/%s#%d", owner, repo, n)
	body := map[string]any{"Do": opt.Style, "head_commit_id": opt.HeadSHA}
	if opt.WhenChecksSucceed {
		body["merge_when_checks_succeed"] = true
	}
	return c.postMerge(ctx, op, owner, repo, n, body)
}

// MarkMerged tells the forge that a PR is merged already: commit is the
// base branch's commit that holds the PR's head (a merge cut off mid-call
// can push the head to the base and leave the PR open). The forge answers
// 405, classified blocked, unless the repository allows manual merges. The
// commit goes in the field spelled MergeCommitID: Forgejo reads no other
// spelling (merge_commit_id arrives empty there, answered 409 "Wrong commit
// ID"), and Gitea reads both.
func (c *Client) MarkMerged(ctx context.Context, owner, repo string, n int, commit string) (MergeResult, error) {
	op := fmt.Sprintf("mark %s/%s#%d merged by %s", owner, repo, n, commit)
	return c.postMerge(ctx, op, owner, repo, n, map[string]any{"Do": "manually-merged", "MergeCommitID": commit})
}

func (c *Client) postMerge(ctx context.Context, op, owner, repo string, n int, body map[string]any) (MergeResult, error) {
	status, b, err := c.do(ctx, op, http.MethodPost, fmt.Sprintf("%s/pulls/%d/merge", repoPath(owner, repo), n), body)
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{Status: status, Message: snippet(b)}
	res.Outcome = ClassifyMerge(status, res.Message)
	if res.Outcome == MergeBlocked || res.Outcome == MergeQuota {
		res.Rule = RefusalRule(status, res.Message)
	}
	if status == http.StatusUnauthorized || status >= 500 {
		return res, newError(op, status, fmt.Errorf("%s", res.Message))
	}
	return res, nil
}

// ClassifyMerge maps a merge answer to an outcome (FACTS: merge answers).
func ClassifyMerge(status int, message string) MergeOutcome {
	msg := strings.ToLower(message)
	switch status {
	case http.StatusOK:
		return MergeDone
	case http.StatusCreated:
		return MergeScheduled
	case http.StatusNotFound:
		return MergeClosed
	case http.StatusLocked:
		return MergeBlocked
	case http.StatusRequestEntityTooLarge:
		return MergeQuota
	case http.StatusMethodNotAllowed:
		return classify405(msg)
	case http.StatusConflict:
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
	case strings.Contains(msg, "push out of date"), strings.Contains(msg, "pushrejected"):
		return MergeNotReady
	}
	return MergeConflict
}

// CancelAutoMerge removes a scheduled auto-merge; none scheduled is not an error.
func (c *Client) CancelAutoMerge(ctx context.Context, owner, repo string, n int) error {
	op := fmt.Sprintf("cancel auto-merge of %s/%s#%d", owner, repo, n)
	status, b, err := c.do(ctx, op, http.MethodDelete, fmt.Sprintf("%s/pulls/%d/merge", repoPath(owner, repo), n), nil)
	if err != nil {
		return err
	}
	if status >= 300 && status != http.StatusNotFound {
		return newError(op, status, fmt.Errorf("%s", snippet(b)))
	}
	return nil
}
