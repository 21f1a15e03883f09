package sandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CreateBranchWithFile creates branch from main with one commit that adds
// the file at path.
func (f *Forge) CreateBranchWithFile(ctx context.Context, token, owner, repo, branch, path, content string) error {
	body := map[string]any{
		"content":    base64.StdEncoding.EncodeToString([]byte(content)),
		"branch":     "main",
		"new_branch": branch,
		"message":    "add " + path,
	}
	if _, err := f.Do(ctx, token, http.MethodPost, contentsPath(owner, repo, path), body, nil); err != nil {
		return fmt.Errorf("sandbox: create branch %s in %s/%s: %w", branch, owner, repo, err)
	}
	return nil
}

// Change is a user's repository with one PR open into main.
type Change struct {
	Token string // the user's
	PR    int
	Head  string
}

// OpenChange creates user with a public repository repo, a branch of it
// adding file, and that branch's PR into main.
func (f *Forge) OpenChange(ctx context.Context, user, repo, branch, file string) (Change, error) {
	token, err := f.CreateUser(ctx, user)
	if err != nil {
		return Change{}, err
	}
	if err := f.CreateRepo(ctx, token, repo); err != nil {
		return Change{}, err
	}
	if err := f.CreateBranchWithFile(ctx, token, user, repo, branch, file, file+"\n"); err != nil {
		return Change{}, err
	}
	n, head, err := f.CreatePR(ctx, token, user, repo, branch, "main", "Add "+file, "")
	return Change{Token: token, PR: n, Head: head}, err
}

// PushFile commits content to path on an existing branch, creating or
// replacing the file, and returns the new commit's SHA.
//
// Gitea's contents API answers some pushes with a 500 and an empty message:
// it pushed the commit and then failed a second ref update of its own
// ("cannot lock ref"), or it based the commit on the branch's tip in its
// database, which a push that has just landed updates only a moment later,
// and git rejected the push ("PushOutOfDate", not a fast-forward). A 500
// whose commit is the branch's head is taken as landed; any other is tried
// again, three times at most.
func (f *Forge) PushFile(ctx context.Context, token, owner, repo, branch, path, content, message string) (string, error) {
	for try := 1; ; try++ {
		sha, status, err := f.pushFile(ctx, token, owner, repo, branch, path, content, message)
		if err == nil || status != http.StatusInternalServerError {
			return sha, err
		}
		if sha, ok := f.landedAnyway(ctx, token, owner, repo, branch, message); ok {
			return sha, nil
		}
		if try == 3 {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(time.Second):
		}
	}
}

// pushFile is one try of PushFile.
func (f *Forge) pushFile(ctx context.Context, token, owner, repo, branch, path, content, message string) (string, int, error) {
	blob, err := f.fileSHA(ctx, token, owner, repo, branch, path)
	if err != nil {
		return "", 0, fmt.Errorf("sandbox: push %s to %s/%s@%s: %w", path, owner, repo, branch, err)
	}
	body := map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(content)),
		"branch":  branch,
		"message": message,
	}
	method := http.MethodPost
	if blob != "" {
		method = http.MethodPut
		body["sha"] = blob
	}
	var resp struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	status, err := f.Do(ctx, token, method, contentsPath(owner, repo, path), body, &resp)
	if err != nil {
		return "", status, fmt.Errorf("sandbox: push %s to %s/%s@%s: %w", path, owner, repo, branch, err)
	}
	return resp.Commit.SHA, status, nil
}

// landedAnyway reports the branch's head when it is the commit a push that
// answered 500 was making (its message).
func (f *Forge) landedAnyway(ctx context.Context, token, owner, repo, branch, message string) (string, bool) {
	var b struct {
		Commit struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"commit"`
	}
	if _, err := f.Do(ctx, token, http.MethodGet, repoPath(owner, repo)+"/branches/"+url.PathEscape(branch), nil, &b); err != nil {
		return "", false
	}
	return b.Commit.ID, strings.TrimSpace(b.Commit.Message) == strings.TrimSpace(message)
}

// fileSHA returns the blob SHA of the file at path on ref, or "" if there is
// no such file.
func (f *Forge) fileSHA(ctx context.Context, token, owner, repo, ref, path string) (string, error) {
	var file struct {
		Type string `json:"type"`
		SHA  string `json:"sha"`
	}
	status, err := f.Do(ctx, token, http.MethodGet, contentsPath(owner, repo, path)+"?ref="+url.QueryEscape(ref), nil, &file)
	if status == http.StatusNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if file.Type != "file" {
		return "", fmt.Errorf("%s is a %s, not a file", path, file.Type)
	}
	return file.SHA, nil
}

// CreatePR opens a pull request from head into base and returns its number
// and head commit.
func (f *Forge) CreatePR(ctx context.Context, token, owner, repo, head, base, title, body string) (number int, headSHA string, err error) {
	req := map[string]any{"head": head, "base": base, "title": title, "body": body}
	var pr struct {
		Number int `json:"number"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/pulls", req, &pr); err != nil {
		return 0, "", fmt.Errorf("sandbox: create PR %s into %s in %s/%s: %w", head, base, owner, repo, err)
	}
	return pr.Number, pr.Head.SHA, nil
}

// PostStatus reports a commit status (state: pending, success, error,
// failure or warning) under the name statusContext.
func (f *Forge) PostStatus(ctx context.Context, token, owner, repo, sha, statusContext, state, targetURL, description string) error {
	body := map[string]any{
		"context":     statusContext,
		"state":       state,
		"target_url":  targetURL,
		"description": description,
	}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/statuses/"+url.PathEscape(sha), body, nil); err != nil {
		return fmt.Errorf("sandbox: post status %s=%s on %s/%s@%s: %w", statusContext, state, owner, repo, sha, err)
	}
	return nil
}

// AddLabel attaches the label named label to issue or PR number, creating the
// label in the repository first if it does not exist.
func (f *Forge) AddLabel(ctx context.Context, token, owner, repo string, number int, label string) error {
	id, err := f.labelID(ctx, token, owner, repo, label)
	if err != nil {
		return fmt.Errorf("sandbox: add label %q to %s/%s#%d: %w", label, owner, repo, number, err)
	}
	path := fmt.Sprintf("%s/issues/%d/labels", repoPath(owner, repo), number)
	if _, err := f.Do(ctx, token, http.MethodPost, path, map[string]any{"labels": []int64{id}}, nil); err != nil {
		return fmt.Errorf("sandbox: add label %q to %s/%s#%d: %w", label, owner, repo, number, err)
	}
	return nil
}

// labelID finds the repository label named name, or creates it.
func (f *Forge) labelID(ctx context.Context, token, owner, repo, name string) (int64, error) {
	type label struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	for page := 1; ; page++ {
		var labels []label
		path := fmt.Sprintf("%s/labels?limit=50&page=%d", repoPath(owner, repo), page)
		if _, err := f.Do(ctx, token, http.MethodGet, path, nil, &labels); err != nil {
			return 0, err
		}
		if len(labels) == 0 {
			break
		}
		for _, l := range labels {
			if l.Name == name {
				return l.ID, nil
			}
		}
	}
	var created label
	body := map[string]any{"name": name, "color": labelColour}
	if _, err := f.Do(ctx, token, http.MethodPost, repoPath(owner, repo)+"/labels", body, &created); err != nil {
		return 0, err
	}
	return created.ID, nil
}

// Review submits a review (event APPROVED, REQUEST_CHANGES or COMMENT) on
// PR n at head, as the token's account, and returns the review's official
// flag as the forge set it.
func (f *Forge) Review(ctx context.Context, token, owner, repo string, n int, head, event, body string) (official bool, err error) {
	var r struct {
		Official bool `json:"official"`
	}
	req := map[string]any{"event": event, "body": body, "commit_id": head}
	path := fmt.Sprintf("%s/pulls/%d/reviews", repoPath(owner, repo), n)
	if _, err := f.Do(ctx, token, http.MethodPost, path, req, &r); err != nil {
		return false, fmt.Errorf("sandbox: review %s/%s#%d: %w", owner, repo, n, err)
	}
	return r.Official, nil
}
