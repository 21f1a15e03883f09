package forge

import "testing"

// TestActionsRun: a status Gitea's Actions reported points at its job,
// "/{owner}/{repo}/actions/runs/{run}/jobs/{job}" under the forge's
// sub-path, with no host (services/actions/commit_status.go); the run is
// found there, and nowhere else: not in another repository's, nor in an
// external CI's link, nor in none.
func TestActionsRun(t *testing.T) {
	for _, tt := range []struct {
		url  string
		run  int64
		want bool
	}{
		{"/o/r/actions/runs/42/jobs/7", 42, true},
		{"/git/O/R/actions/runs/42/jobs/7", 42, true},               // a sub-path; names as the forge cases them
		{"http://forge.test/o/r/actions/runs/5/jobs/9", 5, true},    // an absolute link
		{"/o/r/actions/runs/42/jobs/7/attempt/1", 42, true},         // more after the job, as Gitea allows
		{"/o/other/actions/runs/42/jobs/7", 0, false},               // another repository's run
		{"/o/r/actions/runs/42", 0, false},                          // no job
		{"/o/r/actions/runs/x/jobs/7", 0, false},                    // no number
		{"https://ci.example.com/o/r/builds/42", 0, false},          // an external CI
		{"https://woodpecker.test/repos/3/pipeline/12/5", 0, false}, // another
		{"", 0, false}, // no link
	} {
		run, ok := ActionsRun(tt.url, "o", "r")
		if run != tt.run || ok != tt.want {
			t.Errorf("ActionsRun(%q) = %d, %v; want %d, %v", tt.url, run, ok, tt.run, tt.want)
		}
	}
}
