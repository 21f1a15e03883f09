package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A reply that answers an item carries a hidden marker naming the item's
// token. The marker is the only record that an item was answered.
const replyMarkerPrefix = "<!-- pool-agent-reply answers="

// ReplyMarker is the marker a reply to the item with this token must carry.
func ReplyMarker(token string) string { return replyMarkerPrefix + token + " -->" }

var replyMarkerRE = regexp.MustCompile(`<!--\s*pool-agent-reply\s+answers=([A-Za-z0-9_.:,-]+)\s*-->`)

// AnswerTokens returns the tokens that the reply markers in body answer. A
// marker may list several tokens separated by commas.
func AnswerTokens(body string) []string {
	var out []string
	for _, m := range replyMarkerRE.FindAllStringSubmatch(body, -1) {
		for _, tok := range strings.Split(m[1], ",") {
			if tok != "" {
				out = append(out, tok)
			}
		}
	}
	return out
}

// isPoolMark reports whether a comment is one the pool's side writes for
// itself (claims, retries, replies): never feedback to act on. Anyone else's
// comment that imitates a mark is feedback like any other.
func isPoolMark(body, author string, voices map[string]bool) bool {
	return voices[strings.ToLower(author)] && hasMark(body)
}

func hasMark(body string) bool { return strings.Contains(body, "<!-- pool-") }

// token names one version of one item: the same feedback keeps its token
// from tick to tick, and an edit (a new update time) makes a new one, so a
// reply to the old text no longer answers it.
func token(source string, id int64, version string) string {
	h := sha256.Sum256([]byte(source + "\x00" + fmt.Sprint(id) + "\x00" + version))
	return fmt.Sprintf("%s%d-%s", tokenPrefix[source], id, hex.EncodeToString(h[:4]))
}

var tokenPrefix = map[string]string{
	SourceCheck:   "s",
	SourceComment: "c",
	SourceReview:  "r",
	SourceInline:  "i",
	SourcePR:      "p",
}

// timeVersion is an update time as a token version, at whole seconds as the
// forge keeps it.
func timeVersion(t time.Time) string { return fmt.Sprint(t.Unix()) }
