package report

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// Count is a number that was observed, or unknown.
type Count struct {
	N     int
	Known bool
}

// countOf is n when the read that produced it succeeded, else unknown.
func countOf(n int, err error) Count { return Count{N: n, Known: err == nil} }

func (c Count) String() string {
	if !c.Known {
		return unknown
	}
	return strconv.Itoa(c.N)
}

// MarshalJSON writes the number, or the string "unknown".
func (c Count) MarshalJSON() ([]byte, error) {
	if !c.Known {
		return json.Marshal(unknown)
	}
	return json.Marshal(c.N)
}

// Reviewer states in the report.
const (
	reviewerApproved  = "approved"
	reviewerChanges   = "changes_requested"
	reviewerCommented = "commented"
	reviewerPending   = "pending"
	reviewerTimeout   = "timeout"
)

// Reviewer is one configured reviewer account and where its review stands.
type Reviewer struct {
	Account string `json:"account"`
	Status  string `json:"status"`
	Reviews Count  `json:"reviews"`
	// Counted: the account's review on the head counts (lifecycle.ReviewRule).
	Counted bool `json:"counted"`
}

// Report is what `pool report` shows. Empty strings and a nil Mergeable are
// unknown; Render and JSON spell them out.
type Report struct {
	Number      int
	Branch      string
	HeadSHA     string
	State       string // open, closed, merged or unknown
	Mergeable   *bool
	CIKnown     bool // statuses were read and at least one was reported
	Failed      []lifecycle.Check
	Passed      int
	Pending     []string // contexts
	Superseded  []lifecycle.Check
	Reviewers   []Reviewer
	Threads     Count // unresolved review threads holding unanswered comments
	BotComments Count // PR comments the reviewer accounts wrote, not counting pool marks
	// ChangesRequested: some account's latest verdict on the head commit
	// asks for changes.
	ChangesRequested bool
	// MergeHold says why the supervisor would not merge the PR now
	// (lifecycle.MayMerge), "" when it would; mergeUnread: a read that
	// answer needs failed.
	MergeHold      string
	mergeUnread    bool
	TimedOut       bool // --wait reached its cap
	Recommendation string
	Errors         []string // reads that failed
}

// Build turns a snapshot into the report under the supervisor's policy p
// (configs.Config.Policy), as a read-only observer judges by it. The rule's
// reviewers are the accounts the report lists; the rule says whose reviews
// count.
func Build(s Snapshot, p lifecycle.Policy) Report {
	p = readOnly(p)
	rule := p.Rule
	reviewers := rule.Reviewers
	r := Report{Number: s.Number, Branch: s.PR.HeadRef, HeadSHA: headSHA(s.PR.HeadSHA), State: prState(s.PR)}
	mergeable := s.PR.Mergeable
	r.Mergeable = &mergeable
	r.addChecks(s.Statuses, s.StatusesErr, lifecycle.RequiredContexts(s.Protection))
	r.addReviewers(s, rule)
	r.addMergeHold(s, p)
	r.Threads = countOf(len(openThreads(s.Inline, s.voices(rule))), s.InlineErr)
	r.BotComments = countOf(commentsBy(s.Comments, reviewers), s.CommentsErr)
	for _, err := range s.Errors() {
		r.Errors = append(r.Errors, err.Error())
	}
	r.Recommendation = Recommend(r)
	return r
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// headSHA keeps a well-formed commit id (SHA-1, or SHA-256 repositories).
func headSHA(s string) string {
	if shaRE.MatchString(s) {
		return s
	}
	return ""
}

// addChecks sorts the head's checks as lifecycle judges them; a required
// context no passing check matches yet is pending too.
func (r *Report) addChecks(history []forge.Status, err error, required []string) {
	if err != nil || len(history) == 0 {
		return // an empty answer is unknown, not green
	}
	r.CIKnown = true
	checks := lifecycle.Checks(history)
	for _, c := range checks {
		switch {
		case c.Superseded:
			r.Superseded = append(r.Superseded, c)
		case c.Failed():
			r.Failed = append(r.Failed, c)
		case c.Passed():
			r.Passed++
		default:
			r.Pending = append(r.Pending, c.Context)
		}
	}
	for _, pattern := range lifecycle.MissingRequired(checks, required) {
		if !slices.Contains(r.Pending, pattern) {
			r.Pending = append(r.Pending, pattern)
		}
	}
}

// addMergeHold asks lifecycle whether the supervisor would merge the PR.
func (r *Report) addMergeHold(s Snapshot, p lifecycle.Policy) {
	ok, reason, err := s.MayMerge(p)
	switch {
	case err != nil:
		r.mergeUnread = true
	case !ok:
		r.MergeHold = reason
	}
}

func (r *Report) addReviewers(s Snapshot, rule lifecycle.ReviewRule) {
	for _, a := range rule.Reviewers {
		rv := Reviewer{Account: a, Status: unknown}
		if s.ReviewsErr == nil {
			rv.Status, rv.Reviews = reviewerStatus(a, s.Reviews, s.PR.HeadSHA)
			rv.Counted = counted(rule, s, a)
		}
		r.Reviewers = append(r.Reviewers, rv)
	}
	if s.ReviewsErr == nil {
		r.ChangesRequested = headVerdict(s, rule).State == forge.ReviewRequestChanges
	}
}

// counted reports whether the account has a review on the head that counts
// under the rule (lifecycle.ReviewRule.CountedOn).
func counted(rule lifecycle.ReviewRule, s Snapshot, account string) bool {
	return rule.CountedOn(s.PR.Author, s.PR.HeadSHA, account, reviewsOf(s.Reviews))
}

// reviewerStatus is the account's latest submitted review on the head
// commit, and how many reviews it submitted in all. No review on the head
// is pending.
func reviewerStatus(account string, reviews []forgejo.ReviewDetail, head string) (string, Count) {
	status, n, latest := reviewerPending, 0, int64(0)
	for _, rv := range reviews {
		if !strings.EqualFold(rv.Author, account) || !submitted(rv.State) {
			continue
		}
		n++
		if rv.CommitID == head && !rv.Dismissed && rv.ID > latest {
			status, latest = reviewerWord(rv.State), rv.ID
		}
	}
	return status, Count{N: n, Known: true}
}

func reviewerWord(state string) string {
	switch state {
	case forge.ReviewApproved:
		return reviewerApproved
	case forge.ReviewRequestChanges:
		return reviewerChanges
	}
	return reviewerCommented
}

// commentsBy counts the PR comments the accounts wrote, leaving out the
// pool's own marked comments (claims, retries, replies).
func commentsBy(comments []forge.Comment, accounts []string) int {
	n := 0
	for _, c := range comments {
		if hasAccount(accounts, c.Author) && !hasMark(c.Body) {
			n++
		}
	}
	return n
}

func hasAccount(accounts []string, login string) bool {
	for _, a := range accounts {
		if strings.EqualFold(a, login) {
			return true
		}
	}
	return false
}

// incomplete reports whether a value the recommendation needs is unknown.
func (r Report) incomplete() bool {
	if r.Branch == "" || r.HeadSHA == "" || r.State == unknown || r.Mergeable == nil || r.mergeUnread ||
		!r.CIKnown || !r.Threads.Known || !r.BotComments.Known {
		return true
	}
	for _, rv := range r.Reviewers {
		if rv.Status == unknown {
			return true
		}
	}
	return false
}

// reviewersWaiting reports whether a listed reviewer has no review on the
// head yet.
func (r Report) reviewersWaiting(status string) bool {
	for _, rv := range r.Reviewers {
		if rv.Status == status {
			return true
		}
	}
	return false
}

// settled reports whether polling can stop: the PR is no longer open, or
// every check is terminal and every listed reviewer is done.
func (r Report) settled() bool {
	if r.State == stateMerged || r.State == stateClosed {
		return true
	}
	return r.CIKnown && len(r.Pending) == 0 && !r.reviewersWaiting(reviewerPending) &&
		!r.reviewersWaiting(unknown)
}

// timeOut marks what is still pending at the polling cap.
func (r *Report) timeOut() {
	r.TimedOut = true
	for i := range r.Reviewers {
		if r.Reviewers[i].Status == reviewerPending {
			r.Reviewers[i].Status = reviewerTimeout
		}
	}
	r.Recommendation = Recommend(*r)
}
