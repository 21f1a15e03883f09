package forgejo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
)

// UpdateOutcome is the forge's answer to a PR update (the base branch
// brought into the head branch), classified.
type UpdateOutcome string

const (
	UpdateDone     UpdateOutcome = "updated"  // 200: the head branch holds the base now
	UpdateConflict UpdateOutcome = "conflict" // 409: the base does not merge (or rebase) cleanly
	UpdateRefused  UpdateOutcome = "refused"  // 403: the account may not push to the head branch
	UpdateClosed   UpdateOutcome = "closed"   // 404, 422: gone, closed or merged
	UpdateFailed   UpdateOutcome = "failed"   // anything else (the forge also answers 500 "up to date")
)

// UpdateResult is the classified answer and what the forge said.
type UpdateResult struct {
	Outcome UpdateOutcome
	Status  int
	Message string
}

// Update asks the forge to bring the base branch into PR n's head branch,
// by a merge commit (style "merge") or a rebase ("rebase"): POST
// /repos/{o}/{r}/pulls/{n}/update (Gitea's and Forgejo's
// routers/api/v1/repo/pull.go UpdatePullRequest). A 5xx answer is an
// error to retry (it is also the forge's answer for a branch already up to
// date: re-read the PR).
func (c *Client) Update(ctx context.Context, owner, repo string, n int, style string) (UpdateResult, error) {
	op := fmt.Sprintf("update %s/%s#%d by %s", owner, repo, n, style)
	path := fmt.Sprintf("%s/pulls/%d/update?style=%s", repoPath(owner, repo), n, url.QueryEscape(style))
	status, b, err := c.do(ctx, op, http.MethodPost, path, nil)
	if err != nil {
		return UpdateResult{}, err
	}
	res := UpdateResult{Status: status, Message: snippet(b), Outcome: ClassifyUpdate(status)}
	if status == http.StatusUnauthorized || status >= 500 {
		return res, newError(op, status, fmt.Errorf("%s", res.Message))
	}
	return res, nil
}

// ClassifyUpdate maps an update answer's status to an outcome.
func ClassifyUpdate(status int) UpdateOutcome {
	switch status {
	case http.StatusOK:
		return UpdateDone
	case http.StatusConflict:
		return UpdateConflict
	case http.StatusForbidden:
		return UpdateRefused
	case http.StatusNotFound, http.StatusUnprocessableEntity:
		return UpdateClosed
	}
	return UpdateFailed
}

// CommitParents reads the parents of a commit, in order: a merge commit
// of an update lists the head it merged into first and the base second.
func (c *Client) CommitParents(ctx context.Context, owner, repo, sha string) ([]string, error) {
	op := fmt.Sprintf("read commit %s of %s/%s", sha, owner, repo)
	var commit struct {
		Parents []struct {
			SHA string `json:"sha"`
		} `json:"parents"`
	}
	path := fmt.Sprintf("%s/git/commits/%s?stat=false&verification=false&files=false", repoPath(owner, repo), url.PathEscape(sha))
	if err := c.getJSON(ctx, op, path, &commit); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(commit.Parents))
	for _, p := range commit.Parents {
		out = append(out, p.SHA)
	}
	return out, nil
}

// DiffHash reads PR n's diff (its own changes against the merge base, as
// the forge shows them) and returns its SHA-256: two heads with the same
// hash change the same lines in the same way.
func (c *Client) DiffHash(ctx context.Context, owner, repo string, n int) (string, error) {
	op := fmt.Sprintf("read the diff of %s/%s#%d", owner, repo, n)
	status, b, err := c.do(ctx, op, http.MethodGet, fmt.Sprintf("%s/pulls/%d.diff", repoPath(owner, repo), n), nil)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", newError(op, status, fmt.Errorf("%s", snippet(b)))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
