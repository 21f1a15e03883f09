package report

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/ -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got ---\n%s\n--- want ---\n%s", t.Name(), path, got, want)
	}
}

const (
	headA = "1111111111111111111111111111111111111111"
	baseA = "2222222222222222222222222222222222222222"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// snapshotFixture is an open PR with a mixed CI history, a request for
// changes from one bot and nothing yet from the other.
func snapshotFixture() Snapshot {
	return Snapshot{
		Target: forge.Target{Owner: "acme", Repo: "widgets", Number: 7},
		PR: forgejo.PRDetail{PR: forge.PR{Number: 7, Title: "Add widgets", Author: "alice", State: "open",
			Mergeable: true, HeadSHA: headA, HeadRef: "feature-1", BaseRef: "main", Updated: t0,
			URL: "http://forge.test/acme/widgets/pulls/7", BaseSHA: baseA, MergeBase: baseA}},
		Self:       "pool-bot",
		Protection: forge.Protection{UserCanMerge: true},
		Statuses: []forge.Status{
			{ID: 1, Context: "ci / test (pull_request)", State: "failure", Description: "Has been cancelled", TargetURL: "http://ci.test/run/1", Created: t0},
			{ID: 2, Context: "lint / vet (pull_request)", State: "failure", Description: "go vet found 2 problems", TargetURL: "http://ci.test/run/2", Created: t0},
			{ID: 3, Context: "ci / test (push)", State: "success", Description: "ok", TargetURL: "http://ci.test/run/3", Created: t0.Add(time.Minute)},
			{ID: 4, Context: "ci/woodpecker/pr/build", State: "pending", TargetURL: "http://ci.test/wp/4", Created: t0.Add(time.Minute)},
		},
		Reviews: []forgejo.ReviewDetail{
			{Review: forge.Review{ID: 10, Author: "review-bot", State: forge.ReviewRequestChanges, CommitID: headA, Official: true, Submitted: t0},
				Body: "Please handle the error.", CommentsCount: 1, Updated: t0},
		},
		Inline: []forgejo.InlineComment{
			{ID: 20, ReviewID: 10, Author: "review-bot", Body: "err is ignored here", Path: "main.go", Line: 3, Created: t0, Updated: t0},
		},
		Comments: []forge.Comment{
			{ID: 30, Author: "review-bot", Body: "Review started.", Created: t0, Updated: t0},
			{ID: 31, Author: "alice", Body: "Could you look at the README too?", Created: t0, Updated: t0},
		},
	}
}

var errStatuses500 = &forgejo.Error{Op: "list status history of acme/widgets@1111111111",
	Status: 500, Retryable: true, Err: errors.New("Internal Server Error")}

func boolp(b bool) *bool { return &b }

func rule(reviewers ...string) lifecycle.ReviewRule {
	return lifecycle.ReviewRule{Reviewers: reviewers}
}

func jsonIndent(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n", err
}

func TestReportGolden(t *testing.T) {
	green := Report{Number: 7, Branch: "feature-1", HeadSHA: headA, State: "open", Mergeable: boolp(true),
		CIKnown: true, Passed: 3, Reviewers: []Reviewer{{"review-bot", reviewerApproved, Count{2, true}, true}},
		Threads: Count{0, true}, BotComments: Count{1, true}}
	unknownCI := Build(func() Snapshot {
		s := snapshotFixture()
		s.Statuses, s.StatusesErr = nil, errStatuses500
		return s
	}(), lifecycle.Policy{Rule: rule("review-bot")})
	timedOut := Build(func() Snapshot {
		s := snapshotFixture()
		s.Statuses = s.Statuses[2:] // only the success and the pending run
		s.Reviews, s.Inline = nil, nil
		return s
	}(), lifecycle.Policy{Rule: rule("review-bot", "other-bot")})
	timedOut.timeOut()
	tests := []struct {
		name string
		r    Report
	}{
		{"report_green", withRecommendation(green)},
		{"report_ci_failed", Build(snapshotFixture(), lifecycle.Policy{Rule: rule("review-bot", "other-bot")})},
		{"report_statuses_unknown", unknownCI},
		{"report_timeout", timedOut},
		{"report_no_reviewers", Build(snapshotFixture(), lifecycle.Policy{Rule: rule()})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, tt.r.Render()) })
	}
}

func withRecommendation(r Report) Report {
	r.Recommendation = Recommend(r)
	return r
}

func TestReportJSONGolden(t *testing.T) {
	for name, s := range map[string]Snapshot{
		"report_ci_failed.json": snapshotFixture(),
		"report_statuses_unknown.json": func() Snapshot {
			s := snapshotFixture()
			s.StatusesErr = errStatuses500
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Build(s, lifecycle.Policy{Rule: rule("review-bot")}).JSON()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, string(b)+"\n")
		})
	}
}

func TestDigestGolden(t *testing.T) {
	d := NewDigest(snapshotFixture(), TickOptions{})
	b, err := jsonIndent(d)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tick.json", b)
	golden(t, "tick_prompt", d.promptSection("golden-tag"))
}
