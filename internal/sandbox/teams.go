package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// CreateTeam creates a team of the organisation with write access to the
// named repositories of it, and puts members in it.
func (f *Forge) CreateTeam(ctx context.Context, ownerToken, org, team string, repos, members []string) error {
	body := map[string]any{"name": team, "permission": "write", "includes_all_repositories": false,
		"units": []string{"repo.code", "repo.issues", "repo.pulls"}}
	var created struct {
		ID int64 `json:"id"`
	}
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/orgs/"+url.PathEscape(org)+"/teams", body, &created); err != nil {
		return fmt.Errorf("sandbox: create team %s of %s: %w", team, org, err)
	}
	for _, r := range repos {
		path := fmt.Sprintf("/teams/%d/repos/%s/%s", created.ID, url.PathEscape(org), url.PathEscape(r))
		if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, nil, nil); err != nil {
			return fmt.Errorf("sandbox: give team %s the repository %s: %w", team, r, err)
		}
	}
	for _, m := range members {
		path := fmt.Sprintf("/teams/%d/members/%s", created.ID, url.PathEscape(m))
		if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, nil, nil); err != nil {
			return fmt.Errorf("sandbox: add %s to team %s: %w", m, team, err)
		}
	}
	return nil
}

// RequestTeamReview asks the team for a review of PR n: the forge lists it
// as a review of state REQUEST_REVIEW with no user and the team.
func (f *Forge) RequestTeamReview(ctx context.Context, token, owner, repo string, n int, team string) error {
	path := fmt.Sprintf("%s/pulls/%d/requested_reviewers", repoPath(owner, repo), n)
	if _, err := f.Do(ctx, token, http.MethodPost, path, map[string]any{"team_reviewers": []string{team}}, nil); err != nil {
		return fmt.Errorf("sandbox: request a review of %s/%s#%d from team %s: %w", owner, repo, n, team, err)
	}
	return nil
}

// CreateIssue opens an issue and returns its number.
func (f *Forge) CreateIssue(ctx context.Context, token, owner, repo, title string) (int, error) {
	var is struct {
		Number int `json:"number"`
	}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/issues", map[string]any{"title": title}, &is); err != nil {
		return 0, fmt.Errorf("sandbox: open an issue in %s/%s: %w", owner, repo, err)
	}
	return is.Number, nil
}

// CloseIssue closes issue n.
func (f *Forge) CloseIssue(ctx context.Context, token, owner, repo string, n int) error {
	path := fmt.Sprintf("%s/issues/%d", repoPath(owner, repo), n)
	if _, err := f.Do(ctx, token, http.MethodPatch, path, map[string]any{"state": "closed"}, nil); err != nil {
		return fmt.Errorf("sandbox: close %s/%s#%d: %w", owner, repo, n, err)
	}
	return nil
}

// AddDependency makes issue or PR n depend on issue dep of the same
// repository: the forge refuses to merge n while dep is open.
func (f *Forge) AddDependency(ctx context.Context, token, owner, repo string, n, dep int) error {
	path := fmt.Sprintf("%s/issues/%d/dependencies", repoPath(owner, repo), n)
	body := map[string]any{"owner": owner, "repo": repo, "index": dep}
	if _, err := f.Do(ctx, token, http.MethodPost, path, body, nil); err != nil {
		return fmt.Errorf("sandbox: make %s/%s#%d depend on #%d: %w", owner, repo, n, dep, err)
	}
	return nil
}
