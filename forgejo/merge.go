package forgejo

import (
	"context"
	"fmt"
	"net/http"

	"pool/forge"
)

// MergeOptions are the knobs of one merge call.
type MergeOptions struct {
	Style string // merge, rebase, rebase-merge, squash, fast-forward-only
	// HeadSHA pins the merge: the forge refuses if the head has moved.
	HeadSHA string
	// WhenChecksSucceed schedules an auto-merge instead of merging now.
	WhenChecksSucceed bool
}

// Merge asks the forge to merge a PR. It uses plain HTTP because the SDK
// drops the status and body that tell the outcomes apart. Whatever it
// answers, callers re-read the PR: a failed branch deletion after a
// successful merge still answers an error.
func (c *Client) Merge(ctx context.Context, owner, repo string, n int, opt MergeOptions) (forge.MergeResult, error) {
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
func (c *Client) MarkMerged(ctx context.Context, owner, repo string, n int, commit string) (forge.MergeResult, error) {
	op := fmt.Sprintf("mark %s/%s#%d merged by %s", owner, repo, n, commit)
	return c.postMerge(ctx, op, owner, repo, n, map[string]any{"Do": "manually-merged", "MergeCommitID": commit})
}

func (c *Client) postMerge(ctx context.Context, op, owner, repo string, n int, body map[string]any) (forge.MergeResult, error) {
	status, b, err := c.do(ctx, op, http.MethodPost, fmt.Sprintf("%s/pulls/%d/merge", repoPath(owner, repo), n), body)
	if err != nil {
		return forge.MergeResult{}, err
	}
	res := MergeAnswer(status, snippet(b))
	if status == http.StatusUnauthorized || status >= 500 {
		return res, newError(op, status, fmt.Errorf("%s", res.Message))
	}
	return res, nil
}

// MergeAnswer classifies a merge answer and names the rule a refusal cites.
func MergeAnswer(status int, message string) forge.MergeResult {
	res := forge.MergeResult{Status: status, Message: message, Outcome: ClassifyMerge(status, message)}
	if res.Outcome == forge.MergeBlocked || res.Outcome == forge.MergeQuota {
		res.Rule = forge.RefusalRule(status, message)
	}
	return res
}

// ClassifyMerge maps a merge answer to an outcome (forge.ClassifyMerge).
func ClassifyMerge(status int, message string) forge.MergeOutcome {
	return forge.ClassifyMerge(status, message)
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
