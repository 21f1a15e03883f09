// The supervisor's client against the real forge: an external test of
// package forgejo, so that it shares the forge of forgejo's own real-forge
// tests (sandbox.SharedForge, stopped by their TestMain) rather than start
// one more.
package forgejo_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pool/forgejo"
	"pool/forgejo/sdkclient"
	"pool/internal/sandbox"
)

// TestTheSDKCallsAgainstTheRealForge: the supervisor's client on Gitea
// 1.26: the version, who am i, the default branch, and a comment posted
// (plain HTTP), edited and deleted (the SDK), read back after each step;
// deleting it again is no error.
func TestTheSDKCallsAgainstTheRealForge(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	ch, err := srv.OpenChange(ctx, "sc-alice", "sc-demo", "f1", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sdkclient.New(ctx, srv.URL, ch.Token, forgejo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() == "" {
		t.Error("no server version")
	}
	if me, err := c.Me(ctx); err != nil || me != "sc-alice" {
		t.Fatalf("Me = %q, %v", me, err)
	}
	if b, err := c.DefaultBranch(ctx, "sc-alice", "sc-demo"); err != nil || b != "main" {
		t.Errorf("DefaultBranch = %q, %v; want main", b, err)
	}
	bodies := func() []string {
		cms, err := c.Comments(ctx, "sc-alice", "sc-demo", ch.PR)
		if err != nil {
			t.Fatalf("Comments: %v", err)
		}
		var out []string
		for _, cm := range cms {
			out = append(out, cm.Author+": "+cm.Body)
		}
		return out
	}
	posted, err := c.PostComment(ctx, "sc-alice", "sc-demo", ch.PR, "first")
	if err != nil || posted.ID <= 0 || posted.Author != "sc-alice" || posted.Body != "first" {
		t.Fatalf("PostComment = %+v, %v", posted, err)
	}
	edited, err := c.EditComment(ctx, "sc-alice", "sc-demo", posted.ID, "second")
	if err != nil || edited.ID != posted.ID || edited.Author != "sc-alice" || edited.Body != "second" {
		t.Fatalf("EditComment = %+v, %v", edited, err)
	}
	if got := bodies(); !slices.Equal(got, []string{"sc-alice: second"}) {
		t.Errorf("comments after the edit %q, want the edited one", got)
	}
	for range 2 {
		if err := c.DeleteComment(ctx, "sc-alice", "sc-demo", posted.ID); err != nil {
			t.Fatalf("DeleteComment: %v", err)
		}
	}
	if got := bodies(); len(got) != 0 {
		t.Errorf("comments after the delete %q, want none", got)
	}
}

// TestRejectedTokenIsPermanent: the forge refusing the token (an SDK call
// here) is a permanent ErrUnauthorized, which stops the pool.
func TestRejectedTokenIsPermanent(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	c, err := sdkclient.New(ctx, srv.URL, "not-a-token", forgejo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(ctx)
	if !errors.Is(err, forgejo.ErrUnauthorized) || forgejo.IsRetryable(err) {
		t.Errorf("Me with a bad token = %v; want a permanent ErrUnauthorized", err)
	}
}
