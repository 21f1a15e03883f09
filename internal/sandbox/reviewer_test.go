package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReviewerTurns: the calls a scripted reviewer makes, in order (its PR
// and where it is first, then the diff if it reads it), and the result line
// it ends with.
func TestReviewerTurns(t *testing.T) {
	prompt := "Review PR #3. Repo: owner/demo.\nHead SHA: 0123abcd\n"
	tests := []struct {
		name    string
		verdict Verdict
		want    []string // each call's tool and arguments, then a substring of the final text
	}{
		{"approve", Verdict{Event: "APPROVED"}, []string{ToolPR + " {}",
			ToolVerdict + ` {"body":"Scripted review: approved.","commit":"0123abcd","verdict":"approve"}`, `"decision": "approved"`}},
		{"read the diff, then approve", Verdict{ReadDiff: true, Event: "APPROVED"}, []string{ToolPR + " {}", ToolDiff + " {}",
			ToolVerdict + ` {"body":"Scripted review: approved.","commit":"0123abcd","verdict":"approve"}`, `"decision": "approved"`}},
		{"remark, then approve", Verdict{Remark: true, Event: "APPROVED"},
			[]string{ToolPR + " {}", `"verdict":"comment"`, `"verdict":"approve"`, `"decision": "approved"`}},
		{"no review", Verdict{}, []string{ToolPR, `Worked in /tmp/tree at 0123abcd.`}},
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
				args, _ := json.Marshal(turn.Args)
				got := turn.Tool + " " + string(args)
				if i == len(tt.want)-1 {
					got = turn.Text
				}
				if !strings.Contains(got, want) {
					t.Errorf("turn %d: %q lacks %q", i, got, want)
				}
				if i == 0 {
					outputs = append(outputs, `{"work_tree": "/tmp/tree", "tree_head": "0123abcd"}`)
				} else {
					outputs = append(outputs, `{"posted": "review"}`)
				}
			}
		})
	}
}
