package forgejo

import (
	"bytes"
	"encoding/json"
	"testing"
)

// pageKinds are the entry types FuzzDecodePage drives through decodeEntries,
// each with the check the client uses for it.
var pageKinds = []struct {
	name   string
	decode func([]byte) (good int, bad []error, n int, err error)
	again  func([]byte) (good int, bad []error, n int, err error) // decodes the good entries re-encoded
}{
	{"prs", kind((*apiPR).check), nil},
	{"comments", kind((*apiComment).check), nil},
	{"changes", kind((*apiIssue).check), nil},
	{"reviews", kind((*apiReview).check), nil},
	{"statuses", kind((*apiStatus).check), nil},
}

// kind decodes a page of T and re-encodes its good entries, so the round
// trip can be checked on what was accepted.
func kind[T any](check func(*T) error) func([]byte) (int, []error, int, error) {
	return func(b []byte) (int, []error, int, error) {
		good, bad, n, err := decodeEntries(b, check)
		if err != nil {
			return 0, nil, 0, err
		}
		re, merr := json.Marshal(good)
		if merr != nil {
			return len(good), bad, n, nil // a value JSON cannot carry back
		}
		again, badAgain, nAgain, err := decodeEntries(re, check)
		if err != nil || len(badAgain) > 0 || nAgain != len(good) || len(again) != len(good) {
			panic("round trip: accepted entries re-encoded did not all decode again")
		}
		return len(good), bad, n, nil
	}
}

// FuzzDecodePage feeds arbitrary bytes as one page of each list the pool
// reads: PRs, comments, changed PRs, reviews and commit statuses. No page
// panics; every element is either accepted or refused with a reason; a null
// element is always refused; what was accepted encodes and decodes again.
// Seeds are in testdata/fuzz/FuzzDecodePage.
func FuzzDecodePage(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, page []byte) {
		k := pageKinds[int(which)%len(pageKinds)]
		good, bad, n, err := k.decode(page)
		var raw []json.RawMessage
		if json.Unmarshal(page, &raw) != nil {
			if err == nil && !bytes.Equal(bytes.TrimSpace(page), []byte("null")) {
				t.Fatalf("%s: decoded %q, which is no JSON list", k.name, page)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: a JSON list refused whole: %v", k.name, err)
		}
		if n != len(raw) || good+len(bad) != n {
			t.Fatalf("%s: %d elements, n=%d, %d accepted, %d refused", k.name, len(raw), n, good, len(bad))
		}
		nulls := 0
		for _, r := range raw {
			if bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
				nulls++
			}
		}
		if len(bad) < nulls {
			t.Fatalf("%s: %d null elements, only %d refused", k.name, nulls, len(bad))
		}
	})
}
