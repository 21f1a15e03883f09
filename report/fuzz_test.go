package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/texts"
)

// FuzzDigest builds digests and prompt sections over hostile comments,
// reviews, inline comments and checks: bodies, file names, authors and
// target URLs are the fuzzer's. Seeds are in testdata/fuzz/FuzzDigest.
func FuzzDigest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body, other, author, path, target string, count uint8, flags uint8) {
		s := hostileSnapshot(body, other, author, path, target, int(count)%48, flags)
		d := NewDigest(s, TickOptions{AutoMerge: flags&8 != 0})
		if again := NewDigest(s, TickOptions{AutoMerge: flags&8 != 0}); !reflect.DeepEqual(d, again) {
			t.Fatalf("two digests of one snapshot differ")
		}
		if !fingerprintRE.MatchString(d.Fingerprint) {
			t.Fatalf("fingerprint %q", d.Fingerprint)
		}
		for _, it := range d.Items {
			if !tokenRE.MatchString(it.Answers) {
				t.Fatalf("item %+v: token %q is not a token a reply marker can carry", it, it.Answers)
			}
			if got := AnswerTokens(ReplyMarker(it.Answers)); len(got) != 1 || got[0] != it.Answers {
				t.Fatalf("the reply marker for %q reads back as %q", it.Answers, got)
			}
		}
		checkPromptSection(t, d)
		checkAnswering(t, s, d)
	})
}

var (
	fingerprintRE = regexp.MustCompile(`^[0-9a-f]{16}$`)
	tokenRE       = regexp.MustCompile(`^[scrip][0-9]+-[0-9a-f]{8}$`)
)

// hostileSnapshot is an open PR whose every user-written field is the
// fuzzer's: n comments, a request for changes, a commenting review, an
// inline thread and a failing check.
func hostileSnapshot(body, other, author, path, target string, n int, flags uint8) Snapshot {
	s := snapshotFixture()
	s.Self = "pool-bot"
	s.PR.Mergeable, s.PR.Draft = flags&1 != 0, flags&2 != 0
	s.Comments = nil
	for i := range n {
		b, who := body, author
		if i%2 == 1 {
			b, who = other, "review-bot"
		}
		at := t0.Add(time.Duration(i) * time.Second)
		s.Comments = append(s.Comments, forge.Comment{ID: int64(100 + i), Author: who, Body: b, Created: at, Updated: at})
	}
	s.Reviews = []forgejo.ReviewDetail{
		{Review: forge.Review{ID: 10, Author: author, State: forge.ReviewRequestChanges, CommitID: headA, Submitted: t0},
			Body: body, CommentsCount: 2, Updated: t0, URL: target},
		{Review: forge.Review{ID: 11, Author: "review-bot", State: forge.ReviewComment, CommitID: headA, Submitted: t0},
			Body: other, Updated: t0},
	}
	if flags&4 != 0 {
		s.Reviews = append(s.Reviews, forgejo.ReviewDetail{Review: forge.Review{ID: 12, Author: author,
			State: forge.ReviewApproved, CommitID: headA, Submitted: t0}})
	}
	s.Inline = []forgejo.InlineComment{
		{ID: 20, ReviewID: 10, Author: author, Body: body, Path: path, Line: 3, Created: t0, Updated: t0, URL: target},
		{ID: 21, ReviewID: 10, Author: "review-bot", Body: other, Path: path, Line: 3, Created: t0, Updated: t0},
	}
	s.Statuses = append(s.Statuses, forge.Status{ID: 9, Context: other, State: "failure",
		Description: body, TargetURL: target, Created: t0})
	return s
}

// checkPromptSection: the section's data block is bounded, lists the items
// it keeps in order with their tokens, and counts the ones it left out. Its
// frame against hostile text is texts' to keep (texts.Data.Block and its
// tests); here a line of the block that is not one JSON object fails.
func checkPromptSection(t *testing.T, d Digest) {
	t.Helper()
	const tag = "fuzztag"
	out := d.promptSection(tag)
	block := out[strings.Index(out, texts.DataPreamble(tag)):]
	if inner := len(block) - len(texts.DataPreamble(tag)); inner > texts.MaxDataBlock+100 {
		t.Fatalf("data block of %d bytes, over its bound of %d", inner, texts.MaxDataBlock)
	}
	kept, more := 0, 0
	for _, e := range blockEntries(t, block, tag) {
		switch e["kind"] {
		case "item":
			if kept >= len(d.Items) || e["answers"] != d.Items[kept].Answers {
				t.Fatalf("entry %v is not item %d of the digest", e, kept)
			}
			kept++
		case "more":
			more = int(e["count"].(float64))
		}
	}
	if kept+more != len(d.Items) {
		t.Fatalf("%d items kept and %d counted as left out, of %d", kept, more, len(d.Items))
	}
	if len(d.Items) > 0 && kept == 0 {
		t.Fatalf("no item kept of %d", len(d.Items))
	}
}

// checkAnswering: a reply by the pool's account carrying every
// conversation item's marker answers them all; the same reply by an account
// that is no voice answers nothing.
func checkAnswering(t *testing.T, s Snapshot, d Digest) {
	t.Helper()
	var toks []string
	for _, it := range d.Items {
		if it.Source == forge.SourceComment || it.Source == forge.SourceReview {
			toks = append(toks, it.Answers)
		}
	}
	if len(toks) == 0 {
		return
	}
	reply := func(author string) Digest {
		s := s
		s.Comments = append(append([]forge.Comment(nil), s.Comments...), forge.Comment{ID: 9999, Author: author,
			Created: t0, Updated: t0, Body: ReplyMarker(strings.Join(toks, ",")) + "\nDone."})
		return NewDigest(s, TickOptions{})
	}
	for _, it := range reply(s.Self).Items {
		if it.Source == forge.SourceComment || it.Source == forge.SourceReview {
			t.Fatalf("item %s is still open after the pool's reply answering it", it.Answers)
		}
	}
	if s.voices(TickOptions{}.Policy.Rule)["outsider-0"] {
		return // the fuzzer named a reviewer so
	}
	open := map[string]bool{}
	for _, it := range reply("outsider-0").Items {
		open[it.Answers] = true
	}
	for _, tok := range toks {
		if !open[tok] {
			t.Fatalf("an outsider's reply marker answered item %s", tok)
		}
	}
}

// blockEntries decodes the lines between the block's opening and closing
// lines; the first closing line must end the section.
func blockEntries(t *testing.T, block, tag string) []map[string]any {
	t.Helper()
	_, inner, _ := strings.Cut(block, fmt.Sprintf("<forge-data tag=%q>\n", tag))
	inner, after, ok := strings.Cut(inner, fmt.Sprintf("</forge-data tag=%q>\n", tag))
	if !ok || after != "" {
		t.Fatalf("no block framed with tag %q and ending the section:\n%s", tag, block)
	}
	var out []map[string]any
	for _, l := range strings.Split(inner, "\n") {
		if l == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("a line of the block is not one JSON object: %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}
