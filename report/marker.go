package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"pool/forge"
)

// ReplyMarker is the marker a reply to the item with this token must carry
// (forge.ReplyMarker); it is the only record that an item was answered.
func ReplyMarker(token string) string { return forge.ReplyMarker(token) }

// AnswerTokens returns the tokens that the reply markers in body answer
// (forge.AnswerTokens).
func AnswerTokens(body string) []string { return forge.AnswerTokens(body) }

// isPoolMark reports whether a comment is one the pool's side writes for
// itself (claims, retries, replies): never feedback to act on. Anyone else's
// comment that imitates a mark is feedback like any other.
func isPoolMark(body, author string, voices map[string]bool) bool {
	return voices[strings.ToLower(author)] && hasMark(body)
}

func hasMark(body string) bool { return forge.HasMarker(body) }

// token names one version of one item: the same feedback keeps its token
// from tick to tick, and an edit (a new update time) makes a new one, so a
// reply to the old text no longer answers it.
func token(source string, id int64, version string) string {
	h := sha256.Sum256([]byte(source + "\x00" + fmt.Sprint(id) + "\x00" + version))
	return fmt.Sprintf("%s%d-%s", tokenPrefix[source], id, hex.EncodeToString(h[:4]))
}

var tokenPrefix = map[string]string{
	forge.SourceCheck:   "s",
	forge.SourceComment: "c",
	forge.SourceReview:  "r",
	forge.SourceInline:  "i",
	forge.SourcePR:      "p",
}

// timeVersion is an update time as a token version, at whole seconds as the
// forge keeps it.
func timeVersion(t time.Time) string { return fmt.Sprint(t.Unix()) }
