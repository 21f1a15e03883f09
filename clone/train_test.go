package clone

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTrainCars makes, pushes, lands and checks cars on a local forge: PR
// 1 adds one.txt, PR 2 two.txt, PR 3 a one.txt of its own (a conflict with
// PR 1). A car's first parent is the car ahead, its second the PR's head,
// its tree what the carry-over rule's merge tree of the two computes; a
// landing is leased on the approved head, and an author's push wins.
func TestTrainCars(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head1, head2 := twoPRForge(t, src)
	gitIn(t, src, "checkout", "-qb", "three", "main")
	writeAndCommit(t, src, "one.txt", "not PR 1's\n")
	head3 := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "update-ref", "refs/pull/3/head", head3)
	gitIn(t, src, "checkout", "-q", "main")
	tip := gitIn(t, src, "rev-parse", "main")
	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main", GitName: "Pool Bot", GitEmail: "pool@example.com"})
	if err != nil {
		t.Fatal(err)
	}

	car1 := makeCar(t, c, 1, tip, head1)
	car2 := makeCar(t, c, 2, car1, head2)
	for _, tt := range []struct{ car, want string }{{car1, tip + " " + head1}, {car2, car1 + " " + head2}} {
		if got := gitIn(t, c.repoDir(), "log", "-1", "--format=%P", tt.car); got != tt.want {
			t.Errorf("parents of %s = %s, want %s", tt.car, got, tt.want)
		}
	}
	for _, car := range []string{car1, car2} {
		// A forge links "#2" or "!2" in a pushed commit's message to PR 2:
		// a timeline entry on the PR for every car pushed.
		if msg := gitIn(t, c.repoDir(), "log", "-1", "--format=%B", car); prReference.MatchString(msg) || !strings.Contains(msg, "PR ") {
			t.Errorf("car %s's message %q: want the PR named without a reference the forge links", car, msg)
		}
	}
	if got := gitIn(t, c.repoDir(), "ls-tree", "--name-only", car2); got != ".gitignore\nREADME.md\none.txt\ntwo.txt" {
		t.Errorf("car 2 holds %q, want the base and both PRs", got)
	}
	if same, err := c.MergeTreeIs(ctx, 1, car1, head1, tip); err != nil || !same {
		t.Errorf("MergeTreeIs(car 1, approved head, base tip) = %v, %v; want the carry-over rule's tree", same, err)
	}
	if _, err := c.MakeCar(ctx, 3, car1, head3); !errors.Is(err, ErrCarConflict) {
		t.Errorf("a car of PR 3 on PR 1's: %v, want ErrCarConflict", err)
	}

	// Train branches: pushed, replaced by a re-formed car, deleted.
	if err := c.PushCar(ctx, "pool-train/main/2", car1); err != nil {
		t.Fatal(err)
	}
	if err := c.PushCar(ctx, "pool-train/main/2", car2); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, src, "rev-parse", "pool-train/main/2"); got != car2 {
		t.Errorf("train branch at %s, want the re-formed car %s", got, car2)
	}
	if err := c.PushCar(ctx, "prone.txt", car1); err == nil {
		t.Error("PushCar to a PR's branch: no error, want a refusal")
	}
	for range 2 { // a branch already gone is no error
		if err := c.DeleteCar(ctx, "pool-train/main/2"); err != nil {
			t.Fatal(err)
		}
	}
	if refs := gitIn(t, src, "for-each-ref", "refs/heads/pool-train"); refs != "" {
		t.Errorf("train branches left: %s", refs)
	}

	// Landing: a fast-forward of the approved head, leased on it.
	if err := c.LandCar(ctx, 1, "prone.txt", head1, car1); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, src, "rev-parse", "prone.txt"); got != car1 {
		t.Errorf("PR 1's branch at %s, want car 1 %s", got, car1)
	}
	gitIn(t, src, "checkout", "-q", "prtwo.txt")
	writeAndCommit(t, src, "author.txt", "pushed while the car waited\n")
	pushed := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "checkout", "-q", "main")
	if err := c.LandCar(ctx, 2, "prtwo.txt", head2, car2); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("landing over an author's push: %v, want ErrLeaseLost", err)
	}
	if got := gitIn(t, src, "rev-parse", "prtwo.txt"); got != pushed {
		t.Errorf("PR 2's branch at %s, want the author's push %s", got, pushed)
	}

	// The landed tree: the base fast-forwarded to car 1 has its tree.
	gitIn(t, src, "merge", "-q", "--ff-only", car1)
	if same, got, err := c.BaseTreeIs(ctx, car1); err != nil || !same || got != car1 {
		t.Errorf("BaseTreeIs(car 1) = %v, %s, %v; want true at car 1", same, got, err)
	}
	if same, _, err := c.BaseTreeIs(ctx, car2); err != nil || same {
		t.Errorf("BaseTreeIs(car 2) = %v, %v; want false", same, err)
	}
}

// prReference matches what Gitea and Forgejo link to an issue or PR in a
// commit message: "#12" or "!12" (after a space, a bracket or a quote, or
// at the start).
var prReference = regexp.MustCompile(`(^|[\s(\['"])[#!][0-9]+`)

func makeCar(t *testing.T, c *Clone, pr int, parent, head string) string {
	t.Helper()
	car, err := c.MakeCar(context.Background(), pr, parent, head)
	if err != nil {
		t.Fatalf("MakeCar(#%d): %v", pr, err)
	}
	return car
}

func writeAndCommit(t *testing.T, dir, name, content string) {
	t.Helper()
	write(t, filepath.Join(dir, name), content)
	gitIn(t, dir, "add", name)
	gitIn(t, dir, "commit", "-qm", "change "+strings.TrimSuffix(name, ".txt"))
}
