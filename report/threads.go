package report

import (
	"fmt"
	"sort"
	"strings"

	"pool/forge"
	"pool/forgejo"
)

// thread is the inline comments on one line of one file: the forge shows
// them as one conversation, and a reply to one of them goes on the same line.
type thread struct {
	comments []forgejo.InlineComment // by id
	voices   map[string]bool         // accounts whose reply markers answer
}

// groupThreads groups inline comments by file and line, in the order the
// threads were started.
func groupThreads(inline []forgejo.InlineComment) []thread {
	byKey := map[string]*thread{}
	var keys []string
	sorted := append([]forgejo.InlineComment(nil), inline...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, c := range sorted {
		k := fmt.Sprintf("%s\x00%d\x00%d", c.Path, c.Line, c.OldLine)
		if byKey[k] == nil {
			byKey[k] = &thread{}
			keys = append(keys, k)
		}
		byKey[k].comments = append(byKey[k].comments, c)
	}
	out := make([]thread, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

// resolved reports whether someone resolved the thread on the forge.
func (t thread) resolved() bool {
	for _, c := range t.comments {
		if c.Resolver != "" {
			return true
		}
	}
	return false
}

// items are the thread's comments that no reply in the same thread answers.
// The API cannot resolve a thread, so a thread whose every comment has been
// answered needs nothing more from the pool.
func (t thread) items() []forge.Item {
	if t.resolved() {
		return nil
	}
	answered := map[string]bool{}
	for _, c := range t.comments {
		if !t.voices[strings.ToLower(c.Author)] {
			continue
		}
		for _, tok := range AnswerTokens(c.Body) {
			answered[tok] = true
		}
	}
	var out []forge.Item
	for _, c := range t.comments {
		if isPoolMark(c.Body, c.Author, t.voices) {
			continue
		}
		tok := token(forge.SourceInline, c.ID, timeVersion(c.Updated))
		if answered[tok] {
			continue
		}
		line := c.Line
		if line == 0 {
			line = c.OldLine
		}
		out = append(out, forge.Item{Reason: forge.ReasonUnresolvedThread, Source: forge.SourceInline, ID: c.ID,
			UpdatedAt: c.Updated, Author: c.Author, Body: c.Body, File: c.Path, Line: line,
			URL: c.URL, Answers: tok})
	}
	return out
}

// openThreads are the unresolved threads that still hold comments no voice
// has answered.
func openThreads(inline []forgejo.InlineComment, voices map[string]bool) []thread {
	var out []thread
	for _, t := range groupThreads(inline) {
		t.voices = voices
		if len(t.items()) > 0 {
			out = append(out, t)
		}
	}
	return out
}
