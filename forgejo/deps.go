package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// apiDependency is an issue a PR depends on, as the dependencies list gives it.
type apiDependency struct {
	Number     int      `json:"number"`
	State      string   `json:"state"`
	Repository *apiRepo `json:"repository"`
}

func (d *apiDependency) check() error {
	switch {
	case d.Number <= 0:
		return errors.New("dependency without a number")
	case d.State == "":
		return fmt.Errorf("dependency %d without a state", d.Number)
	}
	return nil
}

// OpenDependencies lists the open issues PR n depends on (all pages), as
// "#12" in the same repository or "owner/repo#3" in another. While any is
// open the forge refuses the merge with HTTP 500 and no message (FACTS,
// "Where Forgejo differs"). An entry that cannot be read is an error: an
// unreadable dependency may be open. A repository with dependencies
// disabled (or no issues) answers 404: none.
func (c *Client) OpenDependencies(ctx context.Context, owner, repo string, n int) ([]string, error) {
	l := listing{op: fmt.Sprintf("list dependencies of %s/%s#%d", owner, repo, n),
		path: fmt.Sprintf("%s/issues/%d/dependencies", repoPath(owner, repo), n)}
	var out []string
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		deps, n, err := strictEntries(body, (*apiDependency).check)
		for _, d := range deps {
			if d.State != "closed" {
				out = append(out, d.ref(owner+"/"+repo))
			}
		}
		return n, err
	})
	if IsNotFound(err) {
		return nil, nil // dependencies disabled in the repository: none can hold the merge
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`)

// ref names the dependency from the PR's repository here.
func (d *apiDependency) ref(here string) string {
	num := "#" + strconv.Itoa(d.Number)
	switch {
	case d.Repository == nil || strings.EqualFold(d.Repository.FullName, here):
		return num
	case !repoNameRE.MatchString(d.Repository.FullName):
		return "an issue in another repository (" + num + ")" // forge text goes into a note: only a plain name
	}
	return d.Repository.FullName + num
}
