package sandbox

import (
	"strings"
	"testing"
)

// TestReviewerTurns: the commands a scripted reviewer runs, in order (where
// it is first), and the result line it ends with.
func TestReviewerTurns(t *testing.T) {
	prompt := "Review PR #3. Repo: owner/demo.\nHead SHA: 0123abcd\n"
	tests := []struct {
		name    string
		verdict Verdict
		want    []string // a substring of each command, then of the final text
	}{
		{"approve", Verdict{Event: "APPROVED"}, []string{"pwd", "pool-review review owner/demo#3 --commit 0123abcd --verdict approve ", `"decision": "approved"`}},
		{"remark, then approve", Verdict{Remark: true, Event: "APPROVED"},
			[]string{"pwd", "--verdict comment ", "--verdict approve ", `"decision": "approved"`}},
		{"no review", Verdict{}, []string{"pwd", `"decision": "commented"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := Reviewer(func(pr string) Verdict {
				if pr != "3" {
					t.Errorf("decide asked about PR %q", pr)
				}
				return tt.verdict
			})
			var outputs []string
			for i, want := range tt.want {
				turn := script(prompt, outputs)
				got := turn.Bash
				if i == len(tt.want)-1 {
					got = turn.Text
				}
				if !strings.Contains(got, want) {
					t.Errorf("turn %d: %q lacks %q", i, got, want)
				}
				if i == 0 {
					outputs = append(outputs, "/tmp/tree\n0123abcd")
				} else {
					outputs = append(outputs, `{"posted": "review"}`)
				}
			}
		})
	}
}
