package forgejo

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
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
