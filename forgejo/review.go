package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"pool/forge"
)

// LineComment is a review's comment on one line of a file as the PR's head
// has it.
type LineComment struct {
	Path string
	Line int // line number in the head's version of the file, from 1
	Body string
}

// NewReview is a review to submit on a PR.
type NewReview struct {
	Event    string // ReviewApproved, ReviewRequestChanges or ReviewComment
	Body     string
	CommitID string // the commit reviewed; the forge files the review on it
	Comments []LineComment
}

type apiReviewComment struct {
	Path        string `json:"path"`
	Body        string `json:"body"`
	NewPosition int    `json:"new_position"`
}

// PostReview submits a review on a PR and returns it as the forge filed it.
func (c *Client) PostReview(ctx context.Context, owner, repo string, n int, r NewReview) (forge.Review, error) {
	op := fmt.Sprintf("review %s/%s#%d", owner, repo, n)
	switch r.Event {
	case forge.ReviewApproved, forge.ReviewRequestChanges, forge.ReviewComment:
	default:
		return forge.Review{}, &Error{Op: op, Err: fmt.Errorf("unknown review event %q", r.Event)}
	}
	body := map[string]any{"event": r.Event, "body": r.Body, "commit_id": r.CommitID}
	comments := []apiReviewComment{}
	for _, lc := range r.Comments {
		comments = append(comments, apiReviewComment{Path: lc.Path, Body: lc.Body, NewPosition: lc.Line})
	}
	body["comments"] = comments
	status, answer, err := c.do(ctx, op, http.MethodPost, fmt.Sprintf("%s/pulls/%d/reviews", repoPath(owner, repo), n), body)
	if err != nil {
		return forge.Review{}, err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return forge.Review{}, newError(op, status, errors.New(snippet(answer)))
	}
	var got *apiReview
	if err := json.Unmarshal(answer, &got); err != nil || got == nil {
		return forge.Review{}, Malformed(op, fmt.Errorf("review: %v", err))
	}
	if err := got.check(); err != nil {
		return forge.Review{}, Malformed(op, err)
	}
	return forge.Review{ID: got.ID, Author: got.User.login(), State: got.State, CommitID: got.CommitID,
		Stale: got.Stale, Dismissed: got.Dismissed, Official: got.Official, Submitted: got.Submitted}, nil
}
