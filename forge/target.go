package forge

import (
	"fmt"
	"regexp"
	"strconv"
)

// Target names one pull request.
type Target struct {
	Owner, Repo string
	Number      int
}

var targetRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)#([0-9]+)$`)

// ParseTarget reads "OWNER/REPO#N".
func ParseTarget(s string) (Target, error) {
	m := targetRE.FindStringSubmatch(s)
	if m == nil {
		return Target{}, fmt.Errorf("want OWNER/REPO#N, got %q", s)
	}
	n, err := strconv.Atoi(m[3])
	if err != nil || n <= 0 {
		return Target{}, fmt.Errorf("bad PR number in %q", s)
	}
	return Target{Owner: m[1], Repo: m[2], Number: n}, nil
}

func (t Target) String() string { return fmt.Sprintf("%s/%s#%d", t.Owner, t.Repo, t.Number) }
