package forge

import (
	"encoding/json"
	"regexp"
	"strings"
)

// The pool's hidden markers are HTML comments the forge does not show, by
// which the pool reads back its own comments: `<!-- pool-KIND {json} -->`
// for data (a claim, a merge retry's attempt, a note's head and reason),
// and `<!-- pool-agent-reply answers=TOKENS -->` on a reply that answers
// items of `pool tick`. The grammar says nothing about who wrote a marker:
// callers count only markers by accounts they trust. This file is the only
// place that writes or reads one.

// Marker kinds.
const (
	MarkClaim    = "claim"     // a review claim (package claims)
	MarkRetry    = "retry"     // a merge retry's diagnostic comment
	MarkBlocked  = "blocked"   // the note that merging is on hold
	MarkNoReview = "no-review" // the note that sessions leave no counted review
	MarkConflict = "conflict"  // the note that the PR conflicts with its base
	MarkWithheld = "withheld"  // the note that a PR gets no session until a maintainer's label
	MarkTrain    = "train"     // the note that a PR left a merge train, or that a train stopped
)

const (
	markPrefix  = "<!-- pool-"
	replyPrefix = markPrefix + "agent-reply answers="
)

// dataMarkers match each kind's marker: one line, one JSON object.
var dataMarkers = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, k := range []string{MarkClaim, MarkRetry, MarkBlocked, MarkNoReview, MarkConflict, MarkWithheld, MarkTrain} {
		m[k] = regexp.MustCompile(regexp.QuoteMeta(markPrefix+k) + ` (\{.*?\}) -->`)
	}
	return m
}()

// Marker renders the marker of kind carrying v as JSON.
func Marker(kind string, v any) string {
	b, _ := json.Marshal(v)
	return markPrefix + kind + " " + string(b) + " -->"
}

// ParseMarker decodes the first marker of kind in body into v; false when
// there is none, or it does not decode.
func ParseMarker(body, kind string, v any) bool {
	re, ok := dataMarkers[kind]
	if !ok {
		return false
	}
	m := re.FindStringSubmatch(body)
	return m != nil && json.Unmarshal([]byte(m[1]), v) == nil
}

// HasMarker reports whether body carries any of the pool's markers.
func HasMarker(body string) bool { return strings.Contains(body, markPrefix) }

// ReplyMarker is the marker a reply to the item with this token carries.
func ReplyMarker(token string) string { return replyPrefix + token + " -->" }

// replyMarker is lenient with white space: agents write it.
var replyMarker = regexp.MustCompile(`<!--\s*pool-agent-reply\s+answers=([A-Za-z0-9_.:,-]+)\s*-->`)

// AnswerTokens returns the tokens the reply markers in body answer. A
// marker may list several tokens separated by commas.
func AnswerTokens(body string) []string {
	var out []string
	for _, m := range replyMarker.FindAllStringSubmatch(body, -1) {
		for _, tok := range strings.Split(m[1], ",") {
			if tok != "" {
				out = append(out, tok)
			}
		}
	}
	return out
}
