package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// CreateUser creates a user whose password is "<name>-password" and returns
// a token of theirs with scopes ["all"].
func (f *Forge) CreateUser(ctx context.Context, name string) (token string, err error) {
	password := name + "-password"
	user := map[string]any{
		"username":             name,
		"email":                name + "@example.com",
		"password":             password,
		"must_change_password": false,
	}
	if _, err := f.Do(ctx, f.AdminToken, http.MethodPost, "/admin/users", user, nil); err != nil {
		return "", fmt.Errorf("sandbox: create user %s: %w", name, err)
	}
	token, err = f.createToken(ctx, name, password)
	if err != nil {
		return "", fmt.Errorf("sandbox: create user %s: token: %w", name, err)
	}
	return token, nil
}

// ScopedToken returns a new token of user's (made by CreateUser) with only
// the given scopes.
func (f *Forge) ScopedToken(ctx context.Context, user string, scopes []string) (string, error) {
	token, err := f.createScopedToken(ctx, user, user+"-password", scopes)
	if err != nil {
		return "", fmt.Errorf("sandbox: token of %s with scopes %v: %w", user, scopes, err)
	}
	return token, nil
}

// createToken needs the password: gitea creates tokens only with basic auth.
func (f *Forge) createToken(ctx context.Context, user, password string) (string, error) {
	return f.createScopedToken(ctx, user, password, []string{"all"})
}

func (f *Forge) createScopedToken(ctx context.Context, user, password string, scopes []string) (string, error) {
	req := map[string]any{"name": "sandbox-" + randomHex(4), "scopes": scopes}
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	path := "/users/" + url.PathEscape(user) + "/tokens"
	if _, err := f.call(ctx, basicAuth(user, password), http.MethodPost, path, req, &tok); err != nil {
		return "", err
	}
	if tok.SHA1 == "" {
		return "", fmt.Errorf("POST %s: answer has no sha1", path)
	}
	return tok.SHA1, nil
}

// CreateRepo creates a public repository of the token's user, with an
// initial commit on main and its hooks trimmed (trimHooks).
func (f *Forge) CreateRepo(ctx context.Context, ownerToken, name string) error {
	repo := map[string]any{"name": name, "auto_init": true, "default_branch": "main"}
	var made createdRepo
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/user/repos", repo, &made); err != nil {
		return fmt.Errorf("sandbox: create repo %s: %w", name, err)
	}
	return f.trimHooks(made.FullName)
}

// CreateOrg creates a public organisation owned by the token's user.
func (f *Forge) CreateOrg(ctx context.Context, ownerToken, org string) error {
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/orgs", map[string]any{"username": org, "visibility": "public"}, nil); err != nil {
		return fmt.Errorf("sandbox: create organisation %s: %w", org, err)
	}
	return nil
}

// CreateOrgRepo creates a public repository of the organisation, with an
// initial commit on main when initial, empty (no branch at all) otherwise,
// and its hooks trimmed (trimHooks).
func (f *Forge) CreateOrgRepo(ctx context.Context, ownerToken, org, name string, initial bool) error {
	repo := map[string]any{"name": name, "auto_init": initial, "default_branch": "main"}
	var made createdRepo
	if _, err := f.Do(ctx, ownerToken, http.MethodPost, "/orgs/"+url.PathEscape(org)+"/repos", repo, &made); err != nil {
		return fmt.Errorf("sandbox: create repo %s/%s: %w", org, name, err)
	}
	return f.trimHooks(made.FullName)
}

// createdRepo is the part of the forge's answer to a repository's creation
// that the sandbox reads.
type createdRepo struct {
	FullName string `json:"full_name"`
}

// trimHooks cuts the git hooks of the repository named "owner/name" to
// what the forge's behaviour needs; each hook run it saves is a start of
// the 150 MB gitea binary, about 0.3 s of CPU whatever the hook then does.
//   - The update hook goes. Gitea keeps it "only for backwards
//     compatibility" (its cmd/hook.go): it does nothing for the forge's own
//     pushes (a merge, a PR's refs/pull/N/head) and refuses a user's push
//     to refs/pull/*, which no test makes. It runs once a pushed ref: in a
//     test of 6 PRs, 18 of its 47 hook runs.
//   - The pre- and post-receive hooks stay, and answer an internal push
//     (GITEA_INTERNAL_PUSH, which Gitea sets only where it pushes a PR's
//     refs/pull/N/head) in the shell, as gitea's own hook command does
//     after starting: pre-receive accepts it, post-receive runs
//     `git update-server-info` and nothing else. In a test of 6 PRs, 12 of
//     its 26 runs of these two. The others run forgehook, not gitea
//     (forgehooks.go).
func (f *Forge) trimHooks(fullName string) error {
	owner, name, ok := strings.Cut(strings.ToLower(fullName), "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("sandbox: the forge named a new repository %q", fullName)
	}
	hooks := filepath.Join(f.Dir, "repos", owner, name+".git", "hooks")
	if err := os.Remove(filepath.Join(hooks, "update")); err != nil {
		return fmt.Errorf("sandbox: drop the update hook of %s: %w", fullName, err)
	}
	for hook := range internalPushAnswers {
		if err := f.writeHook(hooks, hook); err != nil {
			return fmt.Errorf("sandbox: the %s hook of %s: %w", hook, fullName, err)
		}
	}
	return nil
}

// AddOwner puts user in the organisation's Owners team.
func (f *Forge) AddOwner(ctx context.Context, ownerToken, org, user string) error {
	var teams []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if _, err := f.Do(ctx, ownerToken, http.MethodGet, "/orgs/"+url.PathEscape(org)+"/teams", nil, &teams); err != nil {
		return fmt.Errorf("sandbox: list the teams of %s: %w", org, err)
	}
	for _, t := range teams {
		if t.Name == "Owners" {
			path := fmt.Sprintf("/teams/%d/members/%s", t.ID, url.PathEscape(user))
			if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, nil, nil); err != nil {
				return fmt.Errorf("sandbox: add %s to the owners of %s: %w", user, org, err)
			}
			return nil
		}
	}
	return fmt.Errorf("sandbox: %s has no Owners team", org)
}

// ArchiveRepo archives owner/repo.
func (f *Forge) ArchiveRepo(ctx context.Context, ownerToken, owner, repo string) error {
	if _, err := f.Do(ctx, ownerToken, http.MethodPatch, repoPath(owner, repo), map[string]any{"archived": true}, nil); err != nil {
		return fmt.Errorf("sandbox: archive %s/%s: %w", owner, repo, err)
	}
	return nil
}

// AddCollaborator gives user a permission ("read", "write" or "admin") on
// owner/repo.
func (f *Forge) AddCollaborator(ctx context.Context, ownerToken, owner, repo, user, permission string) error {
	path := repoPath(owner, repo) + "/collaborators/" + url.PathEscape(user)
	body := map[string]any{"permission": permission}
	if _, err := f.Do(ctx, ownerToken, http.MethodPut, path, body, nil); err != nil {
		return fmt.Errorf("sandbox: add collaborator %s to %s/%s: %w", user, owner, repo, err)
	}
	return nil
}

// ProtectBranch sets the branch protection rule named after branch, with
// the given settings (the forge's BranchProtection fields, e.g.
// "required_approvals": 2): it creates the rule, or edits it if it exists.
func (f *Forge) ProtectBranch(ctx context.Context, token, owner, repo, branch string, settings map[string]any) error {
	rule := repoPath(owner, repo) + "/branch_protections/" + url.PathEscape(branch)
	status, err := f.Do(ctx, token, http.MethodGet, rule, nil, nil)
	switch {
	case status == http.StatusNotFound:
		body := map[string]any{"rule_name": branch}
		for k, v := range settings {
			body[k] = v
		}
		_, err = f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/branch_protections", body, nil)
	case err == nil:
		_, err = f.Do(ctx, token, http.MethodPatch, rule, settings, nil)
	}
	if err != nil {
		return fmt.Errorf("sandbox: protect %s of %s/%s: %w", branch, owner, repo, err)
	}
	return nil
}
