package forge

import (
	"reflect"
	"testing"
)

func TestMarkerRoundTrip(t *testing.T) {
	type payload struct {
		Head   string `json:"head"`
		Reason string `json:"reason"`
	}
	want := payload{Head: "h1", Reason: "needs 2 approvals; <b> --> has 1"}
	body := "Merging is on hold.\n\n" + Marker(MarkBlocked, want)
	var got payload
	if !ParseMarker(body, MarkBlocked, &got) || got != want {
		t.Fatalf("ParseMarker(%q) = %+v, want %+v", body, got, want)
	}
	if ParseMarker(body, MarkRetry, &got) {
		t.Error("a blocked marker parsed as a retry marker")
	}
	if !HasMarker(body) || HasMarker("plain <!-- comment -->") {
		t.Error("HasMarker")
	}
}

func TestMarkerRejects(t *testing.T) {
	var v map[string]any
	for _, body := range []string{
		`<!-- pool-claim {"instance": -->`,
		"<!-- pool-claim {\"a\":\n1} -->",
		`<!--pool-claim {"a":1}-->`,
		`<!-- pool-unknown {"a":1} -->`,
	} {
		if ParseMarker(body, MarkClaim, &v) || ParseMarker(body, "unknown", &v) {
			t.Errorf("parsed %q", body)
		}
	}
}

func TestAnswerTokens(t *testing.T) {
	body := ReplyMarker("c1-ab,r2-cd") + "\n<!--pool-agent-reply   answers=i3-ef-->"
	if got, want := AnswerTokens(body), []string{"c1-ab", "r2-cd", "i3-ef"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AnswerTokens = %q, want %q", got, want)
	}
}
