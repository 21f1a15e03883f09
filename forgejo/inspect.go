package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"pool/forge"
	"pool/sessionmark"
)

// The reads in this file serve the read-only inspection commands (pool
// report, pool tick): they keep the fields those commands show (base and
// merge-base SHAs, status history with times, review bodies, inline comments
// with their resolver) that the supervisor's reads drop.

// PRDetail is a pull request with the fields only an inspection needs.
type PRDetail struct {
	forge.PR
	Draft bool // a work-in-progress title: the forge will not merge it
}

type apiUser struct {
	Login string `json:"login"`
}

func (u *apiUser) login() string {
	if u == nil {
		return ""
	}
	return u.Login
}

type apiTeam struct {
	Name string `json:"name"`
}

func (t *apiTeam) name() string {
	if t == nil {
		return ""
	}
	return t.Name
}

type apiBranch struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Repo *struct {
		FullName string `json:"full_name"`
	} `json:"repo"`
}

type apiPR struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	User      *apiUser `json:"user"`
	State     string   `json:"state"`
	Merged    bool     `json:"merged"`
	MergedBy  *apiUser `json:"merged_by"`
	Mergeable bool     `json:"mergeable"`
	Draft     bool     `json:"draft"`
	// AllowMaintainerEdit: the author lets accounts that may merge push
	// to the head branch (of a fork).
	AllowMaintainerEdit bool       `json:"allow_maintainer_edit"`
	MergeBase           string     `json:"merge_base"`
	Head                *apiBranch `json:"head"`
	Base                *apiBranch `json:"base"`
	Updated             time.Time  `json:"updated_at"`
	URL                 string     `json:"html_url"`
	Labels              []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// check refuses a PR the pool cannot act on safely.
func (p *apiPR) check() error {
	switch {
	case p.Number <= 0:
		return errors.New("PR without a number")
	case p.State == "":
		return fmt.Errorf("PR %d without a state", p.Number)
	case p.Head == nil || p.Head.SHA == "":
		return fmt.Errorf("PR %d without a head commit", p.Number)
	case p.Base == nil || p.Base.Ref == "":
		return fmt.Errorf("PR %d without a base branch", p.Number)
	case p.User == nil || p.User.Login == "":
		return fmt.Errorf("PR %d without an author", p.Number)
	}
	return nil
}

// PRDetail reads one pull request with its base and merge-base SHAs.
func (c *Client) PRDetail(ctx context.Context, owner, repo string, n int) (PRDetail, error) {
	op := fmt.Sprintf("get %s/%s#%d", owner, repo, n)
	var p *apiPR
	if err := c.getJSON(ctx, op, fmt.Sprintf("%s/pulls/%d", repoPath(owner, repo), n), &p); err != nil {
		return PRDetail{}, err
	}
	if p == nil {
		return PRDetail{}, Malformed(op, errors.New("null"))
	}
	if err := p.check(); err != nil {
		return PRDetail{}, Malformed(op, err)
	}
	return p.detail(), nil
}

// apiIssue is an entry of the issues list, as ChangedPRs reads it.
type apiIssue struct {
	Number  int       `json:"number"`
	State   string    `json:"state"`
	Updated time.Time `json:"updated_at"`
}

func (is *apiIssue) check() error {
	switch {
	case is.Number <= 0:
		return errors.New("issue without a number")
	case is.State == "":
		return fmt.Errorf("issue %d without a state", is.Number)
	}
	return nil
}

type apiComment struct {
	ID      int64     `json:"id"`
	Body    string    `json:"body"`
	User    *apiUser  `json:"user"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

func (cm *apiComment) check() error {
	switch {
	case cm == nil:
		return errors.New("null comment")
	case cm.ID <= 0:
		return errors.New("comment without an id")
	}
	return nil
}

func (cm *apiComment) comment() forge.Comment {
	return forge.Comment{ID: cm.ID, Author: cm.User.login(), Body: cm.Body, Created: cm.Created, Updated: cm.Updated}
}

func (p apiPR) detail() PRDetail {
	d := PRDetail{PR: forge.PR{Number: p.Number, Title: p.Title, Body: p.Body, Author: p.User.login(),
		State: p.State, Merged: p.Merged, MergedBy: p.MergedBy.login(), Mergeable: p.Mergeable, Updated: p.Updated, URL: p.URL,
		MergeBase: p.MergeBase, MaintainerCanEdit: p.AllowMaintainerEdit, Draft: p.Draft}, Draft: p.Draft}
	if p.Head != nil {
		d.HeadRef, d.HeadSHA = p.Head.Ref, p.Head.SHA
		if p.Head.Repo != nil {
			d.HeadRepo = p.Head.Repo.FullName
		}
	}
	if p.Base != nil {
		d.BaseRef, d.BaseSHA = p.Base.Ref, p.Base.SHA
	}
	for _, l := range p.Labels {
		d.Labels = append(d.Labels, l.Name)
	}
	return d
}

// StatusHistory returns every status reported for a commit, all pages,
// oldest first. An empty slice means nothing was reported. sha is a full
// commit id: it reads statuses/{sha}, which takes it as it is, where
// commits/{ref}/statuses first looks for a branch or a tag of that name
// and then for the commit in the repository, git work on every read
// (Gitea's ResolveRefOrSha).
func (c *Client) StatusHistory(ctx context.Context, owner, repo, sha string) ([]forge.Status, error) {
	l := listing{
		op: fmt.Sprintf("list status history of %s/%s@%s", owner, repo, forge.Short(sha)),
		// sort by the per-commit index, a total order, so pages do not
		// shuffle statuses created within the same second
		path: fmt.Sprintf("%s/statuses/%s?sort=highestindex", repoPath(owner, repo), url.PathEscape(sha)),
	}
	seen := map[int64]bool{}
	var out []forge.Status
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		batch, n, err := strictEntries(body, (*apiStatus).check)
		for _, s := range batch {
			if !seen[s.ID] {
				seen[s.ID] = true
				out = append(out, s.status())
			}
		}
		return n, err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (s *apiStatus) status() forge.Status {
	created, _ := time.Parse(time.RFC3339, s.Created) // a bad time stays zero: shown, not guessed
	return forge.Status{ID: s.ID, Context: s.Context, State: s.Status, TargetURL: s.TargetURL,
		Description: s.Description, Created: created}
}

// ReviewDetail is a review with its body and the count of its inline comments.
type ReviewDetail struct {
	forge.Review
	Body          string
	CommentsCount int
	Updated       time.Time
	URL           string
}

type apiReview struct {
	ID            int64     `json:"id"`
	User          *apiUser  `json:"user"`
	Team          *apiTeam  `json:"team"`
	State         string    `json:"state"`
	Body          string    `json:"body"`
	CommitID      string    `json:"commit_id"`
	Stale         bool      `json:"stale"`
	Dismissed     bool      `json:"dismissed"`
	Official      bool      `json:"official"`
	CommentsCount int       `json:"comments_count"`
	Submitted     time.Time `json:"submitted_at"`
	Updated       time.Time `json:"updated_at"`
	URL           string    `json:"html_url"`
}

// check refuses a review that cannot be judged: whose it is and what it
// says decide a merge. A review requested from a team has no user and the
// team (both forges): a pending request, no verdict, so it is read as one.
func (r *apiReview) check() error {
	switch {
	case r.ID <= 0:
		return errors.New("review without an id")
	case r.State == "":
		return fmt.Errorf("review %d without a state", r.ID)
	case r.State == forge.ReviewRequested && r.User == nil && r.Team.name() != "":
		return nil
	case r.User == nil || r.User.Login == "":
		return fmt.Errorf("review %d without an author", r.ID)
	}
	return nil
}

// ReviewDetails lists a PR's reviews with their bodies (all pages). The
// forge filters reviews after paging, so it reads to an empty page. Anyone
// signed in may review a public PR: the list is capped (listing.capped), an
// error past it.
func (c *Client) ReviewDetails(ctx context.Context, owner, repo string, n int) ([]ReviewDetail, error) {
	l := listing{op: fmt.Sprintf("list reviews of %s/%s#%d", owner, repo, n),
		path: fmt.Sprintf("%s/pulls/%d/reviews", repoPath(owner, repo), n), filtered: true, capped: true}
	var out []ReviewDetail
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		batch, n, err := strictEntries(body, (*apiReview).check)
		for _, r := range batch {
			out = append(out, ReviewDetail{Review: forge.Review{ID: r.ID, Author: r.User.login(), Team: r.Team.name(), State: r.State,
				CommitID: r.CommitID, Stale: r.Stale, Dismissed: r.Dismissed, Official: r.Official, Submitted: r.Submitted,
				Mark: sessionmark.Find(r.Body)},
				Body: r.Body, CommentsCount: r.CommentsCount, Updated: r.Updated, URL: r.URL})
		}
		return n, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InlineComment is a review's comment on a file and line.
type InlineComment struct {
	ID       int64
	ReviewID int64
	Author   string
	Body     string
	Path     string
	Line     int    // line on the new side, 0 when the comment is on the old side
	OldLine  int    // line on the old side, 0 when the comment is on the new side
	Resolver string // who resolved the thread, "" while it is open
	CommitID string
	Created  time.Time
	Updated  time.Time
	URL      string
}

type apiInlineComment struct {
	ID       int64     `json:"id"`
	ReviewID int64     `json:"pull_request_review_id"`
	User     *apiUser  `json:"user"`
	Resolver *apiUser  `json:"resolver"`
	Body     string    `json:"body"`
	Path     string    `json:"path"`
	Line     int       `json:"position"`
	OldLine  int       `json:"original_position"`
	CommitID string    `json:"commit_id"`
	Created  time.Time `json:"created_at"`
	Updated  time.Time `json:"updated_at"`
	URL      string    `json:"html_url"`
}

// InlineComments lists the inline comments of one review. The forge does not
// page them: they come in one answer, within the body cap, as a PR's
// comments do; how many reviews there are to read them of is capped by
// ReviewDetails.
func (c *Client) InlineComments(ctx context.Context, owner, repo string, n int, reviewID int64) ([]InlineComment, error) {
	op := fmt.Sprintf("list comments of review %d on %s/%s#%d", reviewID, owner, repo, n)
	var batch []*apiInlineComment
	path := fmt.Sprintf("%s/pulls/%d/reviews/%d/comments", repoPath(owner, repo), n, reviewID)
	if err := c.getJSON(ctx, op, path, &batch); err != nil {
		return nil, err
	}
	out := make([]InlineComment, 0, len(batch))
	for i, rc := range batch {
		if rc == nil || rc.ID <= 0 {
			return nil, Malformed(op, fmt.Errorf("entry %d is null or has no id", i))
		}
		out = append(out, InlineComment{ID: rc.ID, ReviewID: rc.ReviewID, Author: rc.User.login(),
			Body: rc.Body, Path: rc.Path, Line: rc.Line, OldLine: rc.OldLine, Resolver: rc.Resolver.login(),
			CommitID: rc.CommitID, Created: rc.Created, Updated: rc.Updated, URL: rc.URL})
	}
	return out, nil
}

// Timeline event types that arm and disarm a scheduled auto-merge.
const (
	eventAutoMergeArmed    = "pull_scheduled_merge"
	eventAutoMergeDisarmed = "pull_cancel_scheduled_merge"
)

type apiTimelineEvent struct {
	Type string `json:"type"`
}

func (e *apiTimelineEvent) check() error {
	if e.Type == "" {
		return errors.New("timeline event without a type")
	}
	return nil
}

// AutoMergeArmed reports whether the PR's timeline shows an auto-merge
// scheduled and not cancelled since. The forge filters the timeline after
// paging, so it reads to an empty page.
func (c *Client) AutoMergeArmed(ctx context.Context, owner, repo string, n int) (bool, error) {
	l := listing{op: fmt.Sprintf("read timeline of %s/%s#%d", owner, repo, n),
		path: fmt.Sprintf("%s/issues/%d/timeline", repoPath(owner, repo), n), filtered: true, pageCount: true}
	armed := false
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		batch, n, err := strictEntries(body, (*apiTimelineEvent).check)
		for _, e := range batch {
			switch e.Type {
			case eventAutoMergeArmed:
				armed = true
			case eventAutoMergeDisarmed:
				armed = false
			}
		}
		return n, err
	})
	return armed, err
}

func repoPath(owner, repo string) string {
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
}
