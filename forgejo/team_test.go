package forgejo

import (
	"context"
	"testing"

	"pool/forge"
	"pool/internal/sandbox"
)

// TestTeamReviewRequestIsRead: on the real forge, a review requested from a
// team is listed as a review with no user and the team. The client reads
// it as what it is, a pending request by a team, next to the team member's
// approval that follows.
func TestTeamReviewRequestIsRead(t *testing.T) {
	srv := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	const owner, reviewer, org, repo, team = "trq-owner", "trq-reviewer", "trq-org", "trq-repo", "trq-team"
	ownerToken, err := srv.CreateUser(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	reviewerToken, err := srv.CreateUser(ctx, reviewer)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.CreateOrg(ctx, ownerToken, org))
	must(srv.CreateOrgRepo(ctx, ownerToken, org, repo, true))
	must(srv.CreateTeam(ctx, ownerToken, org, team, []string{repo}, []string{reviewer}))
	must(srv.CreateBranchWithFile(ctx, ownerToken, org, repo, "f1", "a.txt", "a\n"))
	n, head, err := srv.CreatePR(ctx, ownerToken, org, repo, "f1", "main", "Add a", "")
	must(err)
	must(srv.RequestTeamReview(ctx, ownerToken, org, repo, n, team))

	c, err := New(ctx, srv.URL, ownerToken, Options{})
	must(err)
	reviews, err := c.Reviews(ctx, org, repo, n)
	if err != nil {
		t.Fatalf("Reviews with a team's review request: %v", err)
	}
	if len(reviews) != 1 || reviews[0].State != forge.ReviewRequested || reviews[0].Author != "" || reviews[0].Team != team {
		t.Fatalf("reviews = %+v; want one request of state %s by team %s, with no author", reviews, forge.ReviewRequested, team)
	}

	if _, err := srv.Review(ctx, reviewerToken, org, repo, n, head, "APPROVED", "fine"); err != nil {
		t.Fatal(err)
	}
	reviews, err = c.Reviews(ctx, org, repo, n)
	must(err)
	approved := false
	for _, r := range reviews {
		approved = approved || (r.State == forge.ReviewApproved && r.Author == reviewer && r.CommitID == head)
	}
	if !approved {
		t.Errorf("reviews after the team member's approval = %+v; want %s's approval at %s", reviews, reviewer, head)
	}
}
