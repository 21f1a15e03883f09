package forgejo

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	sdk "codeberg.org/mvdkleijn/forgejo-sdk/forgejo/v2"
)

// pageKinds are the list decoders FuzzDecodePage drives, each with an
// encoder of its output back into the forge's JSON for the round trip.
var pageKinds = []struct {
	name     string
	decode   func([]byte) (any, int, error) // the values and how many
	encode   func(any) ([]byte, error)
	skipNull bool // a null element is skipped, not an error
}{
	{"prs", wrap(decodePRs), func(v any) ([]byte, error) { return json.Marshal(mapSlice(v.([]PR), prJSON)) }, true},
	{"comments", wrap(decodeComments), func(v any) ([]byte, error) { return json.Marshal(mapSlice(v.([]Comment), commentJSON)) }, false},
	{"changes", wrap(decodeChanges), func(v any) ([]byte, error) { return json.Marshal(mapSlice(v.([]PRChange), changeJSON)) }, false},
	{"reviews", wrap(decodeReviews), func(v any) ([]byte, error) { return json.Marshal(mapSlice(v.([]ReviewDetail), reviewJSON)) }, false},
	{"statuses", wrap(decodeStatuses), func(v any) ([]byte, error) { return json.Marshal(mapSlice(v.([]Status), statusJSON)) }, false},
}

func wrap[T any](decode func([]byte) ([]T, error)) func([]byte) (any, int, error) {
	return func(b []byte) (any, int, error) {
		v, err := decode(b)
		return v, len(v), err
	}
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// FuzzDecodePage feeds arbitrary bytes to the decoder of each list the pool
// reads: PRs, comments, changed PRs, reviews and commit statuses. Seeds are
// in testdata/fuzz/FuzzDecodePage.
func FuzzDecodePage(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, page []byte) {
		k := pageKinds[int(kind)%len(pageKinds)]
		got, n, err := k.decode(page)
		var raw []json.RawMessage
		rawErr := json.Unmarshal(page, &raw)
		if rawErr != nil {
			if err == nil {
				t.Fatalf("%s: decoded %q, which is no JSON list", k.name, page)
			}
			return
		}
		nulls := 0
		for _, r := range raw {
			if bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
				nulls++
			}
		}
		switch {
		case err != nil:
			return // a null, or a wrong type somewhere: an error, not a panic
		case nulls > 0 && !k.skipNull:
			t.Fatalf("%s: a page with %d null elements decoded", k.name, nulls)
		case n != len(raw)-nulls:
			t.Fatalf("%s: %d values from %d elements (%d null)", k.name, n, len(raw), nulls)
		}
		roundTrip(t, k.name, got, k.encode, k.decode)
	})
}

// roundTrip: what was decoded, encoded again as the forge would, decodes to
// the same values.
func roundTrip(t *testing.T, name string, got any, encode func(any) ([]byte, error), decode func([]byte) (any, int, error)) {
	t.Helper()
	b, err := encode(got)
	if err != nil {
		return // a time JSON cannot carry (a year past 9999 after a zone shift)
	}
	again, _, err := decode(b)
	if err != nil {
		t.Fatalf("%s: re-encoded page %s does not decode: %v", name, b, err)
	}
	if !reflect.DeepEqual(inUTC(got), inUTC(again)) {
		t.Fatalf("%s: round trip changed the values:\n got %+v\nthen %+v", name, got, again)
	}
}

// inUTC puts every time in a decoded page in UTC, so values that name the
// same instant compare equal.
func inUTC(v any) any {
	switch s := v.(type) {
	case []PR:
		return mapSlice(s, func(p PR) PR { p.Updated = p.Updated.UTC(); return p })
	case []Comment:
		return mapSlice(s, func(c Comment) Comment { c.Created, c.Updated = c.Created.UTC(), c.Updated.UTC(); return c })
	case []PRChange:
		return mapSlice(s, func(c PRChange) PRChange { c.Updated = c.Updated.UTC(); return c })
	case []ReviewDetail:
		return mapSlice(s, func(r ReviewDetail) ReviewDetail {
			r.Submitted, r.Updated = r.Submitted.UTC(), r.Updated.UTC()
			return r
		})
	case []Status:
		return mapSlice(s, func(st Status) Status { st.Created = st.Created.UTC(); return st })
	}
	return v
}

func user(login string) *sdk.User {
	if login == "" {
		return nil
	}
	return &sdk.User{UserName: login}
}

func prJSON(p PR) *sdk.PullRequest {
	out := &sdk.PullRequest{Index: int64(p.Number), Title: p.Title, Body: p.Body, Poster: user(p.Author),
		State: sdk.StateType(p.State), HasMerged: p.Merged, Mergeable: p.Mergeable, HTMLURL: p.URL,
		Head: &sdk.PRBranchInfo{Ref: p.HeadRef, Sha: p.HeadSHA}, Base: &sdk.PRBranchInfo{Ref: p.BaseRef, Sha: p.BaseSHA},
		MergeBase: p.MergeBase}
	if !p.Updated.IsZero() {
		out.Updated = &p.Updated
	}
	for _, l := range p.Labels {
		out.Labels = append(out.Labels, &sdk.Label{Name: l})
	}
	return out
}

func commentJSON(c Comment) *sdk.Comment {
	return &sdk.Comment{ID: c.ID, Poster: user(c.Author), Body: c.Body, Created: c.Created, Updated: c.Updated}
}

func changeJSON(c PRChange) *sdk.Issue {
	return &sdk.Issue{Index: int64(c.Number), State: sdk.StateType(c.State), Updated: c.Updated}
}

func reviewJSON(r ReviewDetail) *apiReview {
	out := &apiReview{ID: r.ID, State: r.State, Body: r.Body, CommitID: r.CommitID, Stale: r.Stale,
		Dismissed: r.Dismissed, Official: r.Official, CommentsCount: r.CommentsCount, Submitted: r.Submitted, Updated: r.Updated, URL: r.URL}
	if r.Author != "" {
		out.User = &apiUser{Login: r.Author}
	}
	return out
}

func statusJSON(s Status) *apiStatus {
	created := ""
	if !s.Created.IsZero() {
		created = s.Created.Format(time.RFC3339Nano)
	}
	return &apiStatus{ID: s.ID, Status: s.State, Context: s.Context, TargetURL: s.TargetURL,
		Description: s.Description, Created: created}
}
