package clone

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixSecret = "0123456789abcdef-the-fixers-token"

// TestPushFix: a fixer's commits in its work tree reach the PR's own
// branch, pushed by the pool, only when they are a line of commits on top
// of the head the session was given that holds no secret; nothing of the
// tree's git runs, and no other branch moves. src plays the forge: PR 1's
// branch is prone.txt, PR 2's prtwo.txt.
func TestPushFix(t *testing.T) {
	tests := []struct {
		name    string
		session func(t *testing.T, dir, other string) // what the fixer does in its tree
		pushed  bool                                  // the PR's branch moves to the tree's HEAD
		refused string                                // else the refusal names this
	}{
		{name: "a commit on top", pushed: true, session: func(t *testing.T, dir, _ string) {
			commitFile(t, dir, "FIXED.txt")
		}},
		{name: "two commits, one in a new directory", pushed: true, session: func(t *testing.T, dir, _ string) {
			commitFile(t, dir, "FIXED.txt")
			write(t, filepath.Join(dir, "sub", "deep", "x.txt"), "x\n")
			gitIn(t, dir, "add", "sub")
			gitIn(t, dir, "commit", "-qm", "deep")
		}},
		{name: "nothing committed", session: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "uncommitted.txt"), "x\n")
		}},
		{name: "the token in a file", refused: "holds a credential", session: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "notes.txt"), "see "+fixSecret+"\n")
			gitIn(t, dir, "add", "notes.txt")
			gitIn(t, dir, "commit", "-qm", "notes")
		}},
		{name: "the token in the message (-F)", refused: "holds a credential", session: func(t *testing.T, dir, _ string) {
			msg := filepath.Join(t.TempDir(), "token")
			write(t, msg, fixSecret+"\n")
			write(t, filepath.Join(dir, "a.txt"), "a\n")
			gitIn(t, dir, "add", "a.txt")
			gitIn(t, dir, "commit", "-qnF", msg)
		}},
		{name: "the token in a file name", refused: "holds a credential", session: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, fixSecret), "a\n")
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "a name")
		}},
		{name: "a merge of another PR (MERGE_HEAD)", refused: "2 parents", session: func(t *testing.T, dir, other string) {
			commitFile(t, dir, "FIXED.txt")
			write(t, filepath.Join(dir, ".git", "MERGE_HEAD"), other+"\n")
			gitIn(t, dir, "commit", "-qm", "merge")
		}},
		{name: "another PR's head checked out", refused: "not on top", session: func(t *testing.T, dir, other string) {
			gitIn(t, dir, "checkout", "-q", "--detach", other)
		}},
		{name: "a rewrite of the head", refused: "not on top", session: func(t *testing.T, dir, _ string) {
			gitIn(t, dir, "reset", "-q", "--soft", "HEAD~1")
			gitIn(t, dir, "commit", "-qm", "rewritten")
		}},
		{name: "a commit on another PR's head", refused: "not on top", session: func(t *testing.T, dir, other string) {
			gitIn(t, dir, "checkout", "-q", "--detach", other)
			commitFile(t, dir, "FIXED.txt")
		}},
		{name: "a branch checked out", pushed: true, session: func(t *testing.T, dir, _ string) {
			gitIn(t, dir, "checkout", "-qb", "work")
			commitFile(t, dir, "FIXED.txt")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			src := filepath.Join(t.TempDir(), "src")
			head1, head2 := twoPRForge(t, src)
			c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Remove()
			if _, err := c.TakeTree(ctx, 2, head2); err != nil { // the clone has PR 2's head too
				t.Fatal(err)
			}
			dir, err := c.TakeTree(ctx, 1, head1)
			if err != nil {
				t.Fatal(err)
			}
			// The session plants what would run if the pool ran git there.
			mark := filepath.Join(t.TempDir(), "ran")
			gitIn(t, dir, "config", "core.fsmonitor", "touch "+mark+" #")
			write(t, filepath.Join(dir, ".git", "hooks", "pre-push"), "#!/bin/sh\ntouch "+mark+"\n")
			os.Chmod(filepath.Join(dir, ".git", "hooks", "pre-push"), 0o755)
			gitIn(t, dir, "config", "--unset", "core.fsmonitor")
			tt.session(t, dir, head2)
			gitIn(t, dir, "config", "core.fsmonitor", "touch "+mark+" #")
			os.Remove(mark)
			after := gitIn(t, dir, "rev-parse", "HEAD")

			got, err := c.PushFix(ctx, dir, Fix{PR: 1, Head: head1, URL: src, Branch: "prone.txt", Token: "tok", Secrets: []string{fixSecret, "tok"}})
			branch := gitIn(t, src, "rev-parse", "prone.txt")
			switch {
			case tt.refused != "":
				if !IsRefused(err) || !strings.Contains(err.Error(), tt.refused) {
					t.Errorf("PushFix = %q, %v; want refused: %s", got, err, tt.refused)
				}
				if strings.Contains(err.Error(), fixSecret) {
					t.Errorf("the refusal names the secret: %v", err)
				}
				if branch != head1 {
					t.Errorf("the PR's branch moved to %s on a refused fix", branch)
				}
			case tt.pushed:
				if err != nil || got != after || branch != after {
					t.Errorf("PushFix = %q, %v; branch at %s; want the tree's HEAD %s pushed", got, err, branch, after)
				}
			default:
				if err != nil || got != "" || branch != head1 {
					t.Errorf("PushFix = %q, %v; branch at %s; want nothing pushed", got, err, branch)
				}
			}
			if other := gitIn(t, src, "rev-parse", "prtwo.txt"); other != head2 {
				t.Errorf("another PR's branch moved: %s, want %s", other, head2)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Error("a command the session planted in its .git ran")
			}
		})
	}
}

// TestPushFixLeasesTheHead: a fix is pushed only while the PR's branch is
// still at the head the session was given; a push someone made meanwhile
// stays.
func TestPushFixLeasesTheHead(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	head1, _ := twoPRForge(t, src)
	c, err := Open(ctx, Options{Dir: filepath.Join(t.TempDir(), "clone"), URL: src, Token: "tok", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	dir, err := c.TakeTree(ctx, 1, head1)
	if err != nil {
		t.Fatal(err)
	}
	commitFile(t, dir, "FIXED.txt")
	gitIn(t, src, "checkout", "-q", "prone.txt")
	commitFile(t, src, "author.txt")
	gitIn(t, src, "checkout", "-q", "main")
	moved := gitIn(t, src, "rev-parse", "prone.txt")

	if got, err := c.PushFix(ctx, dir, Fix{PR: 1, Head: head1, URL: src, Branch: "prone.txt", Token: "tok"}); err == nil {
		t.Errorf("PushFix = %q over a branch that moved, want an error", got)
	}
	if got := gitIn(t, src, "rev-parse", "prone.txt"); got != moved {
		t.Errorf("the branch is at %s, want the author's push %s", got, moved)
	}
}
