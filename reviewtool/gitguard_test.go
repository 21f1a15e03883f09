package reviewtool

import "testing"

// TestCheckGitArgs: what the agent's git may be asked, and what reads or
// writes outside the work tree, however the shell spelled it.
func TestCheckGitArgs(t *testing.T) {
	allowed := [][]string{
		{"diff", "origin/main...HEAD"},
		{"diff", "--stat", "origin/main...HEAD", "--", "main.go", "cmd/x.go"},
		{"log", "--oneline", "-5", "--format=%H %s"},
		{"log", "-SFoo", "-GOops", "-n5"},
		{"show", "HEAD~1:main.go"},
		{"status", "--porcelain", "--ignored"},
		{"add", "-A"},
		{"commit", "-m", "/fix: paths with ../ in them"},
		{"rev-parse", "--show-toplevel"},       // not guarded: the server's own calls
		{"-C", "/elsewhere", "diff", "/etc/x"}, // not guarded: the permissions refuse it
		{},
	}
	for _, args := range allowed {
		if err := CheckGitArgs(args); err != nil {
			t.Errorf("git %q refused: %v", args, err)
		}
	}
	refused := [][]string{
		{"diff", "/dev/null", "/run/credentials/reviewer-token"},
		{"diff", "--", "/dev/null", "token"},
		{"diff", "../../token", "x"},
		{"diff", "a/../../token", "x"},
		{"show", "HEAD:../x"},
		{"diff", "~/token", "x"},
		{"diff", "--no-index", "a", "b"},
		{"diff", "--no-ind", "a", "b"},
		{"log", "--outp=x"},
		{"log", "--output=x"},
		{"diff", "-O", "order"},
		{"diff", "-pOorder"},
		{"log", "-pF"},
		{"show", "--textconv"},
		{"diff", "--ext-diff"},
		{"log", "--stdin"},
		{"commit", "-F", "msg"},
		{"commit", "--file=msg"},
		{"commit", "-m", "x", "--no-verify"},
		{"add", "--pathspec-from-file=list"},
		{"status", "/"},
	}
	for _, args := range refused {
		if err := CheckGitArgs(args); err == nil {
			t.Errorf("git %q allowed", args)
		}
	}
}
