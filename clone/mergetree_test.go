package clone

import (
	"context"
	"path/filepath"
	"testing"
)

// TestMergeTreeIs: the merge of the base into a PR's head that git makes
// has the tree of the merge of the two; an "evil merge" with the same
// parents and one more change does not, nor does a commit of other parents.
func TestMergeTreeIs(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head := localForge(t, src)
	commitFile(t, src, "base-later.txt")
	base := gitIn(t, src, "rev-parse", "HEAD")

	gitIn(t, src, "checkout", "-q", "feature")
	gitIn(t, src, "merge", "-q", "--no-ff", "-m", "update", "main")
	made := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "reset", "-q", "--hard", head)
	gitIn(t, src, "merge", "-q", "--no-ff", "--no-commit", "main")
	commitFile(t, src, "evil.txt") // commits the merge with the extra file
	evil := gitIn(t, src, "rev-parse", "HEAD")
	if got := gitIn(t, src, "rev-parse", evil+"^1", evil+"^2"); got != head+"\n"+base {
		t.Fatalf("the evil merge's parents are %q, want the head and the base", got)
	}
	gitIn(t, src, "checkout", "-q", "main")

	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		commit string
		want   bool
	}{
		{"the update's merge", made, true},
		{"an evil merge with the same parents", evil, false},
		{"the approved head itself", head, false},
	} {
		gitIn(t, src, "update-ref", "refs/pull/1/head", tt.commit)
		got, err := c.MergeTreeIs(ctx, 1, tt.commit, head, base)
		if err != nil || got != tt.want {
			t.Errorf("%s: MergeTreeIs = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := c.MergeTreeIs(ctx, 1, "--all", head, base); err == nil {
		t.Error("a commit that is not a commit id was passed to git")
	}
}
