package forgejo

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "codeberg.org/mvdkleijn/forgejo-sdk/forgejo/v2"
)

// The list decoders turn one page of a forge list into the pool's types.
// Pages read through the SDK are unmarshalled by it with encoding/json into
// the SDK's element types and converted by the to* functions here; pages
// read by plain HTTP are decoded here whole. The decode* functions run both
// steps on raw bytes, so a test (FuzzDecodePage) can feed them any page.
//
// A page is hostile data: a null element, a missing field or a wrong type
// is an error or a zero value, never a panic. A null PR in a PR list is
// skipped (Forgejo lists a PR it fails to convert as null: no client can
// see that PR, and failing the list would stop the pool for all the others);
// a null anywhere else is an error, because a review or status the pool
// cannot see could change its decision.

// errNullElement is a list page holding null where an element should be.
var errNullElement = errors.New("null element in a list")

func nullAt(i int) error { return fmt.Errorf("%w at index %d", errNullElement, i) }

// decodePRs decodes a page of GET /repos/{o}/{r}/pulls.
func decodePRs(b []byte) ([]PR, error) {
	var page []*sdk.PullRequest
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	return toPRs(page), nil
}

// toPRs converts a page of PRs, skipping null elements.
func toPRs(page []*sdk.PullRequest) []PR {
	out := make([]PR, 0, len(page))
	for _, p := range page {
		if p != nil {
			out = append(out, toPR(p))
		}
	}
	return out
}

// decodeComments decodes a page of GET /repos/{o}/{r}/issues/{n}/comments.
func decodeComments(b []byte) ([]Comment, error) {
	var page []*sdk.Comment
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	return toComments(page)
}

func toComments(page []*sdk.Comment) ([]Comment, error) {
	out := make([]Comment, 0, len(page))
	for i, c := range page {
		if c == nil {
			return nil, nullAt(i)
		}
		out = append(out, toComment(c))
	}
	return out, nil
}

// decodeChanges decodes a page of GET /repos/{o}/{r}/issues?type=pulls.
func decodeChanges(b []byte) ([]PRChange, error) {
	var page []*sdk.Issue
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	return toChanges(page)
}

func toChanges(page []*sdk.Issue) ([]PRChange, error) {
	out := make([]PRChange, 0, len(page))
	for i, is := range page {
		if is == nil {
			return nil, nullAt(i)
		}
		out = append(out, PRChange{Number: int(is.Index), State: string(is.State), Updated: is.Updated})
	}
	return out, nil
}

// decodeReviews decodes a page of GET /repos/{o}/{r}/pulls/{n}/reviews.
func decodeReviews(b []byte) ([]ReviewDetail, error) {
	var page []*apiReview
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	out := make([]ReviewDetail, 0, len(page))
	for i, r := range page {
		if r == nil {
			return nil, nullAt(i)
		}
		out = append(out, r.detail())
	}
	return out, nil
}

// decodeStatuses decodes a page of GET /repos/{o}/{r}/commits/{ref}/statuses.
func decodeStatuses(b []byte) ([]Status, error) {
	var page []*apiStatus
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(page))
	for i, s := range page {
		if s == nil {
			return nil, nullAt(i)
		}
		out = append(out, s.status())
	}
	return out, nil
}
