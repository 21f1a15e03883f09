// Package forge holds the plain data the pool reads from a forge: a pull
// request, its comments, reviews and commit statuses (and the newest status
// per context), the branch protection in force, and the classified answer
// to a merge call with the protection rule a refusal names; and the grammar
// of the hidden markers the pool writes into comments (marker.go); the wait
// before the next try after failures (backoff.go); and an item of a PR's
// digest, something on it that needs an answer or a fix (item.go), which
// report finds and texts puts into a prompt. It
// imports nothing of the project and no SDK, so the pure decision packages
// (lifecycle, claims) link only this and the standard library; package
// forgejo talks to the forge and converts its answers into these types.
package forge

import (
	"strings"
	"time"
)

// PR is what the pool needs to know of a pull request.
type PR struct {
	Number    int
	Title     string
	Body      string
	Author    string
	State     string // open or closed
	Merged    bool
	MergedBy  string // the account that merged it ("" when the forge did not say)
	Mergeable bool
	Draft     bool // marked work in progress (a WIP title): the forge will not merge it
	HeadSHA   string
	HeadRef   string
	HeadRepo  string // owner/name of the head branch's repository ("" when the forge did not say)
	// MaintainerCanEdit: the author lets those who may merge push to the
	// head branch, which a PR from a fork needs before the pool updates it.
	MaintainerCanEdit bool
	BaseRef           string
	BaseSHA           string // the base branch's head commit when the PR was read
	MergeBase         string // the commit the head branched from
	Labels            []string
	Updated           time.Time
	URL               string
}

// Behind reports whether the base branch has moved past the commit the
// head branched from (unknown counts as not behind).
func (p PR) Behind() bool {
	return p.BaseSHA != "" && p.MergeBase != "" && p.BaseSHA != p.MergeBase
}

// SameRepo reports whether the head branch is in the repository repo
// (owner/name); a head repository the forge did not name counts as not.
func (p PR) SameRepo(repo string) bool { return strings.EqualFold(p.HeadRepo, repo) }

// HasLabel reports whether the PR carries the label (case-insensitive).
func (p PR) HasLabel(name string) bool {
	for _, l := range p.Labels {
		if strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}

// Comment is an issue or PR comment.
type Comment struct {
	ID      int64
	Author  string
	Body    string
	Created time.Time
	Updated time.Time
}

// Review states as the forge names them.
const (
	ReviewApproved       = "APPROVED"
	ReviewRequestChanges = "REQUEST_CHANGES"
	ReviewComment        = "COMMENT"
	ReviewRequested      = "REQUEST_REVIEW" // a review was asked of someone
)

// Review is a PR review.
type Review struct {
	ID        int64
	Author    string // "" for a review requested from a team
	Team      string // the team a review was requested from (state REQUEST_REVIEW), else ""
	State     string
	CommitID  string
	Stale     bool
	Dismissed bool
	// Official: the forge counts this review toward required approvals (its
	// author had write access or is on the approvals whitelist; only an
	// account's latest verdict keeps the flag).
	Official  bool
	Submitted time.Time
	// Mark is the session mark that ends the review's body ("" when
	// none): text anyone holding the reviewer's token can write, until
	// the pool checks it (Vouched).
	Mark string
	// Vouched: the pool checked Mark; a session the pool started for this
	// PR at CommitID filed the review.
	Vouched bool
}

// Status is one commit status report.
type Status struct {
	ID          int64
	Context     string
	State       string // pending, success, error, failure, warning
	TargetURL   string
	Description string
	Created     time.Time
}

// Protection is the branch protection in force on a branch, as far as the
// token can read it. Every account can read a branch's summary (whether it
// is protected, required approvals and status contexts, and whether the
// token's own account may merge); the rule's other settings need an account
// that administers the repository. Full says whether they were read.
type Protection struct {
	Protected bool
	Rule      string // the rule's name (a branch name or a glob)
	Full      bool   // the whole rule was read, not only the branch summary

	// UserCanMerge: the token's account may merge into the branch (write
	// access, and on the merge whitelist when one is enabled).
	UserCanMerge bool

	RequiredApprovals int
	StatusCheck       bool     // merging waits for StatusContexts
	StatusContexts    []string // glob patterns

	ApprovalsWhitelist      bool
	ApprovalsWhitelistUsers []string
	ApprovalsWhitelistTeams []string
	BlockOnRejected         bool // an official request for changes blocks
	BlockOnOfficialRequests bool // a pending official review request blocks
	BlockOnOutdated         bool // a head behind its base blocks
	DismissStale            bool // a push dismisses approvals
	IgnoreStale             bool // stale approvals do not count
	RequireSigned           bool
}

// Repository is what the pool reads of the repository's own settings.
type Repository struct {
	DefaultBranch string
	// FastForwardOnly: whether the repository allows fast-forward-only
	// merges (allow_fast_forward_only_merge), with which a merge train's
	// cars land. A forge that has no such setting (Forgejo before 7.0)
	// leaves it Unsaid.
	FastForwardOnly Setting
}

// Setting is a yes-or-no setting of the forge's that an older forge may
// not report.
type Setting int8

const (
	Unsaid Setting = iota // the forge's answer has no such field
	No
	Yes
)

func (s Setting) String() string {
	switch s {
	case No:
		return "no"
	case Yes:
		return "yes"
	}
	return "unsaid"
}

// Short is a commit id's first 10 hex digits, as a person reads it in a
// log, a note or a page; an id that short or shorter is kept whole.
func Short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}
