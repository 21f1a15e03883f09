package forgejo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// pageKinds are the entry types FuzzDecodePage drives through decodeEntries,
// each with the check the client uses for it.
var pageKinds = []struct {
	name   string
	decode func([]byte) (page, error)
}{
	{"prs", kind((*apiPR).check)},
	{"comments", kind((*apiComment).check)},
	{"changes", kind((*apiIssue).check)},
	{"reviews", kind((*apiReview).check)},
	{"statuses", kind((*apiStatus).check)},
}

// page is what decodeEntries made of one page: how many entries it
// accepted, why it refused the others, how many the page held, and whether
// the accepted ones, encoded again, all decoded again (trip).
type page struct {
	good int
	bad  []error
	n    int
	trip error
}

// kind decodes a page of T and re-encodes its good entries, so the round
// trip can be checked on what was accepted.
func kind[T any](check func(*T) error) func([]byte) (page, error) {
	return func(b []byte) (page, error) {
		good, bad, n, err := decodeEntries(b, check)
		if err != nil {
			return page{}, err
		}
		p := page{good: len(good), bad: bad, n: n}
		re, err := json.Marshal(good)
		if err != nil {
			return p, nil // a value JSON cannot carry back
		}
		again, badAgain, nAgain, err := decodeEntries(re, check)
		if err != nil || len(badAgain) > 0 || nAgain != len(good) || len(again) != len(good) {
			p.trip = fmt.Errorf("%d accepted entries re-encoded as %s decoded as %d good, %v bad, %v", len(good), re, len(again), badAgain, err)
		}
		return p, nil
	}
}

// FuzzDecodePage feeds arbitrary bytes as one page of each list the pool
// reads: PRs, comments, changed PRs, reviews and commit statuses. No page
// panics; every element is either accepted or refused with a reason; a null
// element is always refused; what was accepted encodes and decodes again.
// Seeds are in testdata/fuzz/FuzzDecodePage.
func FuzzDecodePage(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		k := pageKinds[int(which)%len(pageKinds)]
		got, err := k.decode(body)
		var raw []json.RawMessage
		if json.Unmarshal(body, &raw) != nil {
			if err == nil && !bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
				t.Fatalf("%s: decoded %q, which is no JSON list", k.name, body)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: a JSON list refused whole: %v", k.name, err)
		}
		if got.n != len(raw) || got.good+len(got.bad) != got.n {
			t.Fatalf("%s: %d elements, n=%d, %d accepted, %d refused", k.name, len(raw), got.n, got.good, len(got.bad))
		}
		if got.trip != nil {
			t.Fatalf("%s: round trip: %v", k.name, got.trip)
		}
		nulls := 0
		for _, r := range raw {
			if bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
				nulls++
			}
		}
		if len(got.bad) < nulls {
			t.Fatalf("%s: %d null elements, only %d refused", k.name, nulls, len(got.bad))
		}
	})
}
