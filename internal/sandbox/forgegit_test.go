package sandbox

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestGitNewEnoughForMergeTree(t *testing.T) {
	for version, want := range map[string]bool{
		"git version 2.39.5\n":              false,
		"git version 2.40.0\n":              true,
		"git version 2.47.3":                true,
		"git version 3.0.1 (Apple Git-1)\n": true,
		"git version 1.99.9\n":              false,
		"something else\n":                  false,
	} {
		if got := gitNewEnough(version); got != want {
			t.Errorf("gitNewEnough(%q) = %v, want %v", version, got, want)
		}
	}
}

func TestForgeConfigNamesItsGit(t *testing.T) {
	s := newForgeSettings(t.TempDir(), "/static")
	var plain, withGit bytes.Buffer
	if err := appINI.Execute(&plain, s); err != nil {
		t.Fatal(err)
	}
	s.Git = "/cache/git-2.47.3/bin/git"
	if err := appINI.Execute(&withGit, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "[git]") {
		t.Errorf("app.ini without a git of its own has a [git] section:\n%s", plain.String())
	}
	if !strings.Contains(withGit.String(), "\n[git]\nPATH = /cache/git-2.47.3/bin/git\n") {
		t.Errorf("app.ini does not name the forge's git:\n%s", withGit.String())
	}
}

// The forge runs a git whose merge-tree Gitea uses to test PRs (ForgeGit):
// it says which at its start.
func TestTheForgeRunsAGitWithMergeTree(t *testing.T) {
	f := ForgeForTest(t)
	log, err := os.ReadFile(f.logPath())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Git version: (\S+)`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("the forge's log does not name its git:\n%s", f.LogTail())
	}
	if !gitNewEnough("git version " + string(m[1])) {
		t.Errorf("the forge runs git %s: it tests each PR in a temporary repository, not with merge-tree", m[1])
	}
}
