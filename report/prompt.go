package report

import (
	"fmt"
	"strings"
	"time"
)

// maxPromptBody bounds one item's body in a prompt.
const maxPromptBody = 2000

// PromptSection lists the digest's items for a reviewer or fixer prompt:
// each with its body, where it lives and its answers token, and how to mark
// a reply so the next tick sees the item answered.
func (d Digest) PromptSection() string {
	var b strings.Builder
	where := fmt.Sprintf("%s#%d (pool tick, fingerprint %s)", d.Repo, d.PR, d.Fingerprint)
	if len(d.Items) == 0 {
		fmt.Fprintf(&b, "No open items on %s.\n", where)
		d.writeIncomplete(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "Open items on %s:\n", where)
	d.writeIncomplete(&b)
	for i, it := range d.Items {
		fmt.Fprintf(&b, "\n%d. [%s] %s\n", i+1, it.Reason, it.describe())
		fmt.Fprintf(&b, "   answers=%s\n", it.Answers)
		for _, line := range strings.Split(clip(strings.TrimSpace(it.Body), maxPromptBody), "\n") {
			fmt.Fprintf(&b, "   > %s\n", line)
		}
	}
	b.WriteString(`
Answer every comment, review and review-comment item where it was written: a
comment or review item with a PR comment, a review-comment item with a review
comment on the same file and line. Start each reply with the item's marker on
a line of its own, one marker per item it answers:
`)
	fmt.Fprintf(&b, "%s\n", ReplyMarker("<token>"))
	b.WriteString(`Items about checks and the PR itself clear only when the forge stops showing
them: fix the cause.
`)
	return b.String()
}

func (d Digest) writeIncomplete(b *strings.Builder) {
	if len(d.Errors) == 0 {
		return
	}
	b.WriteString("This observation is incomplete; these reads failed:\n")
	for _, e := range d.Errors {
		fmt.Fprintf(b, "- %s\n", e)
	}
}

// describe says what the item is and where it lives, in one line.
func (it Item) describe() string {
	s := fmt.Sprintf("%s %d", it.Source, it.ID)
	if it.Author != "" {
		s += " by " + it.Author
	}
	if it.File != "" {
		s += fmt.Sprintf(" on %s:%d", it.File, it.Line)
	}
	if !it.UpdatedAt.IsZero() {
		s += ", updated " + it.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if it.URL != "" {
		s += " (" + it.URL + ")"
	}
	return s
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + " [...]"
}

// Diff compares two digests of one PR by item token: the items of before
// that after no longer shows, those it still shows, and those that are new.
func Diff(before, after Digest) (gone, remaining, added []Item) {
	inAfter := map[string]bool{}
	for _, it := range after.Items {
		inAfter[it.Answers] = true
	}
	inBefore := map[string]bool{}
	for _, it := range before.Items {
		inBefore[it.Answers] = true
		if inAfter[it.Answers] {
			remaining = append(remaining, it)
		} else {
			gone = append(gone, it)
		}
	}
	for _, it := range after.Items {
		if !inBefore[it.Answers] {
			added = append(added, it)
		}
	}
	return gone, remaining, added
}
