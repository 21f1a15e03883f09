package lifecycle

import (
	"reflect"
	"testing"

	"pool/forge"
)

func TestSummarize(t *testing.T) {
	st := func(pairs ...string) []Check {
		var out []Check
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, Check{ID: int64(i), Context: pairs[i], State: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		checks   []Check
		required []string
		want     Summary
	}{
		{"nothing reported, nothing required", nil, nil, ChecksNone},
		{"nothing reported, a context required", nil, []string{"ci/test"}, ChecksPending},
		{"all green", st("a", "success", "b", "success"), nil, ChecksGreen},
		{"one pending", st("a", "success", "b", "pending"), nil, ChecksPending},
		{"one failure wins", st("a", "pending", "b", "failure"), nil, ChecksFailing},
		{"error is failure", st("a", "error"), nil, ChecksFailing},
		{"warning is no pass: Gitea counts it a failure", st("a", "warning"), nil, ChecksFailing},
		{"a required context in warning fails", st("ci/test", "warning"), []string{"ci/test"}, ChecksFailing},
		{"warning does not satisfy a required pattern", st("ci/test", "warning", "lint", "success"), []string{"ci/*"}, ChecksFailing},
		{"an unknown state is pending", st("a", "skipped-ish"), nil, ChecksPending},
		{"the required context reported green", st("ci/test", "success"), []string{"ci/test"}, ChecksGreen},
		{"another context green, the required one missing", st("lint", "success"), []string{"ci/test"}, ChecksPending},
		{"a glob spans slashes as on the forge", st("ci/woodpecker/pr/build", "success"), []string{"ci/*"}, ChecksGreen},
		{"alternatives", st("build (push)", "success"), []string{"build ({push,pull_request})"}, ChecksGreen},
		{"a failing unrequired check still fails", st("ci/test", "success", "lint", "failure"), []string{"ci/test"}, ChecksFailing},
		{"only superseded cancellations is nothing", []Check{{Context: "x", State: "failure", Superseded: true}}, nil, ChecksNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.checks, tt.required); got != tt.want {
				t.Errorf("Summarize = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestContextMatches(t *testing.T) {
	tests := []struct {
		pattern, context string
		want             bool
	}{
		{"ci/test", "ci/test", true},
		{"ci/test", "ci/test2", false},
		{"ci/*", "ci/woodpecker/pr/x", true},
		{"ci/?", "ci/a", true},
		{"[abc]x", "bx", true},
		{"[!abc]x", "bx", false},
		{"a.b", "axb", false}, // dots are literal
		{"[", "[", true},      // malformed: matches itself only
	}
	for _, tt := range tests {
		if got := contextMatches(tt.pattern, tt.context); got != tt.want {
			t.Errorf("contextMatches(%q, %q) = %v, want %v", tt.pattern, tt.context, got, tt.want)
		}
	}
}

func TestWorkflowOf(t *testing.T) {
	tests := []struct{ context, want string }{
		{"ci / test (pull_request)", "actions:ci"},
		{"ci / test (push)", "actions:ci"},
		{"Build and test / unit tests (pull_request_target)", "actions:Build and test"},
		{"ci/woodpecker/pr/build", "woodpecker:build"},
		{"ci/woodpecker/push/build", "woodpecker:build"},
		{"continuous-integration/jenkins", ""},
		{"ci / test", ""},
	}
	for _, tt := range tests {
		if got := workflowOf(tt.context); got != tt.want {
			t.Errorf("workflowOf(%q) = %q, want %q", tt.context, got, tt.want)
		}
	}
}

func st(id int64, context, state, desc string) forge.Status {
	return forge.Status{ID: id, Context: context, State: state, Description: desc}
}

func TestChecksSupersession(t *testing.T) {
	const cancelled = "Has been cancelled"
	tests := []struct {
		name           string
		history        []forge.Status
		wantFailed     []string
		wantSuperseded []string
	}{
		{name: "newer success of the same workflow supersedes",
			history:        []forge.Status{st(1, "ci / test (pull_request)", "failure", cancelled), st(2, "ci / test (push)", "success", "")},
			wantSuperseded: []string{"ci / test (pull_request)"}},
		{name: "a newer pending run supersedes too",
			history:        []forge.Status{st(1, "ci / test (pull_request)", "failure", cancelled), st(2, "ci / test (push)", "pending", "")},
			wantSuperseded: []string{"ci / test (pull_request)"}},
		{name: "an older run does not supersede",
			history:    []forge.Status{st(1, "ci / test (push)", "success", ""), st(2, "ci / test (pull_request)", "failure", cancelled)},
			wantFailed: []string{"ci / test (pull_request)"}},
		{name: "another workflow does not supersede",
			history:    []forge.Status{st(1, "ci / test (pull_request)", "failure", cancelled), st(2, "lint / vet (push)", "success", "")},
			wantFailed: []string{"ci / test (pull_request)"}},
		{name: "a newer cancellation does not supersede",
			history: []forge.Status{st(1, "ci / test (pull_request)", "failure", cancelled), st(2, "ci / test (push)", "failure", cancelled)},
			// the newest cancellation stands: no newer run reported after it
			wantFailed:     []string{"ci / test (push)"},
			wantSuperseded: []string{"ci / test (pull_request)"}},
		{name: "a real failure is never superseded",
			history:    []forge.Status{st(1, "ci / test (pull_request)", "failure", "exit status 1"), st(2, "ci / test (push)", "success", "")},
			wantFailed: []string{"ci / test (pull_request)"}},
		{name: "woodpecker cancellation",
			history:        []forge.Status{st(1, "ci/woodpecker/pr/build", "failure", "Pipeline was canceled"), st(2, "ci/woodpecker/push/build", "success", "")},
			wantSuperseded: []string{"ci/woodpecker/pr/build"}},
		{name: "no workflow name, no shortcut",
			history:    []forge.Status{st(1, "jenkins", "error", "Build cancelled"), st(2, "jenkins-2", "success", "")},
			wantFailed: []string{"jenkins"}},
		{name: "newest per context wins",
			history: []forge.Status{st(1, "ci / test (push)", "failure", "boom"), st(2, "ci / test (push)", "success", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var failed, superseded []string
			for _, c := range Checks(tt.history) {
				if c.Failed() {
					failed = append(failed, c.Context)
				}
				if c.Superseded {
					superseded = append(superseded, c.Context)
				}
			}
			if !reflect.DeepEqual(failed, tt.wantFailed) || !reflect.DeepEqual(superseded, tt.wantSuperseded) {
				t.Errorf("failed %q superseded %q; want %q, %q", failed, superseded, tt.wantFailed, tt.wantSuperseded)
			}
		})
	}
}
