package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiRepo is the part of a repository the pool reads from a list.
type apiRepo struct {
	FullName string `json:"full_name"`
	Archived bool   `json:"archived"`
}

func (r *apiRepo) check() error {
	owner, name, ok := strings.Cut(r.FullName, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return errors.New("no owner/name")
	}
	return nil
}

// OrgRepos lists the repositories of an organisation that the token can
// see and that are not archived, as "owner/name" (all pages). An entry the
// forge could not render is left out. The forge drops the repositories the
// token may not see after paging (Gitea 1.26 routers/api/v1/user/repo.go),
// so a short page does not end the list.
func (c *Client) OrgRepos(ctx context.Context, org string) ([]string, error) {
	l := listing{op: "list the repositories of " + org, path: "/orgs/" + url.PathEscape(org) + "/repos", filtered: true}
	var out []string
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		repos, _, n, err := decodeEntries(body, (*apiRepo).check)
		for _, r := range repos {
			if !r.Archived {
				out = append(out, r.FullName)
			}
		}
		return n, err
	})
	return out, err
}

// RepoPRChange is a PR that changed since some moment, in a cross-repository
// search: its repository ("owner/name") and the change.
type RepoPRChange struct {
	Repo string
	PRChange
}

// apiSearchIssue is an entry of the cross-repository issue search.
type apiSearchIssue struct {
	apiIssue
	Repository *apiRepo `json:"repository"`
}

func (is *apiSearchIssue) check() error {
	if is.Repository == nil {
		return errors.New("issue without a repository")
	}
	if err := is.Repository.check(); err != nil {
		return err
	}
	return is.apiIssue.check()
}

// SearchChangedPRs lists the PRs, open or closed, updated at or after since
// in every repository of owner that the token can see (all pages): one
// request for all of them when nothing changed. Like ChangedPRs it returns
// the forge's clock at the answer. The forge (Gitea 1.26
// routers/api/v1/repo/issue.go SearchIssues) reads it from its database,
// not its search index, when no keyword is given, so it has no indexing
// lag; with owner it covers the owner's repositories the token may read,
// read-only ones included, and no other. An unreadable entry is left out
// and logged; the periodic full listing catches up with it.
func (c *Client) SearchChangedPRs(ctx context.Context, owner string, since time.Time) ([]RepoPRChange, time.Time, error) {
	l := listing{
		op: fmt.Sprintf("search PRs of %s changed since %s", owner, since.Format(time.RFC3339)),
		path: "/repos/issues/search?type=pulls&state=all&owner=" + url.QueryEscape(owner) +
			"&since=" + queryTime(since),
	}
	var out []RepoPRChange
	var served time.Time
	var bad []error
	err := c.eachPage(ctx, l, func(page int, body []byte, hdr http.Header) (int, error) {
		if page == 1 {
			served, _ = http.ParseTime(hdr.Get("Date"))
		}
		issues, skipped, n, err := decodeEntries(body, (*apiSearchIssue).check)
		for _, is := range issues {
			out = append(out, RepoPRChange{Repo: is.Repository.FullName,
				PRChange: PRChange{Number: is.Number, State: is.State, Updated: is.Updated}})
		}
		bad = append(bad, skipped...)
		return n, err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	c.noteSkipped("search PRs of "+owner+" changed", bad)
	return out, served, nil
}
