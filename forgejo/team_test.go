package forgejo

import (
	"context"
	"testing"

	"pool/internal/sandbox"
)

// TestTeamReviewRequestIsRead: on the real forge, a review requested from a
// team is listed as a review with no user and the team. The client reads
// it as what it is, a pending request by a team, next to the team member's
// approval that follows.
func TestTeamReviewRequestIsRead(t *testing.T) {
	forge := sandbox.SharedForge(t)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	const owner, reviewer, org, repo, team = "trq-owner", "trq-reviewer", "trq-org", "trq-repo", "trq-team"
	ownerToken, err := forge.CreateUser(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	reviewerToken, err := forge.CreateUser(ctx, reviewer)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(forge.CreateOrg(ctx, ownerToken, org))
	must(forge.CreateOrgRepo(ctx, ownerToken, org, repo, true))
	must(forge.CreateTeam(ctx, ownerToken, org, team, []string{repo}, []string{reviewer}))
	must(forge.CreateBranchWithFile(ctx, ownerToken, org, repo, "f1", "a.txt", "a\n"))
	n, head, err := forge.CreatePR(ctx, ownerToken, org, repo, "f1", "main", "Add a", "")
	must(err)
	must(forge.RequestTeamReview(ctx, ownerToken, org, repo, n, team))

	c, err := New(ctx, forge.URL, ownerToken, Options{})
	must(err)
	reviews, err := c.Reviews(ctx, org, repo, n)
	if err != nil {
		t.Fatalf("Reviews with a team's review request: %v", err)
	}
	if len(reviews) != 1 || reviews[0].State != ReviewRequested || reviews[0].Author != "" || reviews[0].Team != team {
		t.Fatalf("reviews = %+v; want one request of state %s by team %s, with no author", reviews, ReviewRequested, team)
	}

	if _, err := forge.Review(ctx, reviewerToken, org, repo, n, head, "APPROVED", "fine"); err != nil {
		t.Fatal(err)
	}
	reviews, err = c.Reviews(ctx, org, repo, n)
	must(err)
	approved := false
	for _, r := range reviews {
		approved = approved || (r.State == ReviewApproved && r.Author == reviewer && r.CommitID == head)
	}
	if !approved {
		t.Errorf("reviews after the team member's approval = %+v; want %s's approval at %s", reviews, reviewer, head)
	}
}
