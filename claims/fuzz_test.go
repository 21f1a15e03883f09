package claims

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pool/forge"
)

// FuzzParse feeds hostile comment bodies to the claim parser, and claims
// built from arbitrary strings through Body and back. Seeds are in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body, instance, sha, takeover string, atUnix int64) {
		c := forge.Comment{ID: 42, Author: "bot", Body: body, Created: t0}
		cl, ok := Parse(c)
		if ok {
			checkParsed(t, c, cl)
			// What parses once renders and parses to the same claim.
			again, ok := Parse(forge.Comment{ID: 42, Author: "bot", Body: Body(cl), Created: t0})
			if !ok || !sameClaim(again, cl) {
				t.Fatalf("parsed %+v from %q, but its rendering parses to %+v (ok=%v)", cl, body, again, ok)
			}
		}
		judgeDoesNotPanic(c)

		// Round trip: any claim the pool could write parses back whole.
		if instance == "" || sha == "" || !utf8.ValidString(instance) || !utf8.ValidString(sha) || !utf8.ValidString(takeover) {
			// json.Marshal replaces invalid UTF-8; the pool writes only valid text.
			return
		}
		at := time.Unix(atUnix%(1<<34), 0).UTC() // years 1425..2514: a time JSON can carry
		want := Claim{Instance: instance, SHA: sha, Takeover: takeover, At: at}
		got, ok := Parse(forge.Comment{ID: 7, Author: "bot", Body: Body(want) + "\n\n---\nsigned", Created: t0})
		if !ok || !sameClaim(got, want) {
			t.Fatalf("Body(%+v) parses to %+v (ok=%v)", want, got, ok)
		}
		if !strings.HasPrefix(Body(want), Sentence(instance)) {
			t.Fatalf("Body lost the human sentence: %q", Body(want))
		}
	})
}

func checkParsed(t *testing.T, c forge.Comment, cl Claim) {
	t.Helper()
	if cl.Instance == "" || cl.SHA == "" {
		t.Fatalf("accepted a claim without instance or sha from %q: %+v", c.Body, cl)
	}
	if !strings.Contains(c.Body, "<!-- pool-claim ") {
		t.Fatalf("accepted a claim from a body without the marker: %q", c.Body)
	}
	if cl.CommentID != c.ID || cl.Author != c.Author || !cl.Posted.Equal(c.Created) {
		t.Fatalf("the claim does not carry its comment's id, author and time: %+v", cl)
	}
}

func sameClaim(a, b Claim) bool {
	return a.Instance == b.Instance && a.SHA == b.SHA && a.Takeover == b.Takeover && a.At.Equal(b.At)
}

// judgeDoesNotPanic runs the whole protocol over the comment, as a pool does.
func judgeDoesNotPanic(c forge.Comment) {
	v := View{HeadSHA: "head", Comments: []forge.Comment{c, c}, Trusted: []string{"bot"}, TTL: time.Minute, Now: t0}
	if cl, ok := Parse(c); ok {
		v.HeadSHA = cl.SHA
	}
	Judge(v, "me")
	Losers(v, "me")
	Stale(v)
}
