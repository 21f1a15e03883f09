package lifecycle

import (
	"strings"

	"pool/forgejo"
)

// ReviewRule says whose reviews count: the one rule the supervisor, `pool
// report` and `pool tick` share, so they can never disagree.
//
// A review counts when it is an approval or a request for changes on the
// PR's head commit, not dismissed, not stale, not by the PR's author, and
// marked official by the forge: its author had write access, or is on the
// branch's approvals whitelist, when the review was submitted (the forge
// keeps the flag on each account's latest verdict only). Reviewers narrows
// this to the listed accounts; AllowUnofficial, with Reviewers, lets the
// listed accounts count without write access. A comment-only review carries
// no verdict and no official flag: it counts, as "reviewed without a
// verdict", only for an account the operator listed.
type ReviewRule struct {
	Reviewers       []string
	AllowUnofficial bool
}

// Listed reports whether the account is one of the configured reviewers.
func (r ReviewRule) Listed(account string) bool { return hasAccount(r.Reviewers, account) }

// Counts reports whether review v counts for a PR by author at head.
func (r ReviewRule) Counts(author, head string, v forgejo.Review) bool {
	return v.CommitID == head && !v.Stale && r.trusted(author, v)
}

// trusted is Counts without the head: the review's author speaks for the
// review process on this PR, whichever commit the review was on.
func (r ReviewRule) trusted(author string, v forgejo.Review) bool {
	if v.Dismissed || strings.EqualFold(v.Author, author) || v.Author == "" {
		return false
	}
	if len(r.Reviewers) > 0 && !r.Listed(v.Author) {
		return false
	}
	switch v.State {
	case forgejo.ReviewApproved, forgejo.ReviewRequestChanges:
		return v.Official || (r.AllowUnofficial && r.Listed(v.Author))
	case forgejo.ReviewComment:
		return r.Listed(v.Author)
	}
	return false
}

// Verdict is where the counted reviews on a PR's head stand.
type Verdict struct {
	// State is REQUEST_CHANGES when any counting account's latest verdict
	// asks for changes, else APPROVED when one approves, else COMMENT when
	// a listed reviewer only commented, else "".
	State string
	// Approvers are the accounts whose latest counted verdict approves.
	Approvers []string
	// Uncounted are the authors of approvals on the head that do not count
	// (not official, not listed, or by the author): shown, never obeyed.
	Uncounted []string
}

// HeadVerdict folds a PR's reviews into the verdict on its head: each
// counting account's latest approval or request for changes decides for
// that account.
func (r ReviewRule) HeadVerdict(author, head string, reviews []forgejo.Review) Verdict {
	latest := map[string]forgejo.Review{}
	commented := false
	var v Verdict
	for _, rv := range reviews {
		if !r.Counts(author, head, rv) {
			if rv.State == forgejo.ReviewApproved && rv.CommitID == head && !rv.Dismissed {
				v.Uncounted = appendOnce(v.Uncounted, rv.Author)
			}
			continue
		}
		if rv.State == forgejo.ReviewComment {
			commented = true
			continue
		}
		who := strings.ToLower(rv.Author)
		if cur, ok := latest[who]; !ok || rv.ID > cur.ID {
			latest[who] = rv
		}
	}
	for _, rv := range latest {
		switch rv.State {
		case forgejo.ReviewRequestChanges:
			v.State = forgejo.ReviewRequestChanges
		case forgejo.ReviewApproved:
			v.Approvers = appendOnce(v.Approvers, rv.Author)
		}
	}
	switch {
	case v.State != "":
	case len(v.Approvers) > 0:
		v.State = forgejo.ReviewApproved
	case commented:
		v.State = forgejo.ReviewComment
	}
	return v
}

// Voices are the accounts whose word on the PR the pool takes as its
// review process's own: the pool's account, and every account with a
// counted review on the PR at any commit. Only their reply markers answer
// an item, and only their activity keeps a claim alive.
func (r ReviewRule) Voices(self, author string, reviews []forgejo.Review) map[string]bool {
	out := map[string]bool{}
	if self != "" {
		out[strings.ToLower(self)] = true
	}
	for _, rv := range reviews {
		if r.trusted(author, rv) {
			out[strings.ToLower(rv.Author)] = true
		}
	}
	return out
}

func hasAccount(list []string, account string) bool {
	for _, a := range list {
		if strings.EqualFold(a, account) {
			return true
		}
	}
	return false
}

func appendOnce(list []string, account string) []string {
	if hasAccount(list, account) {
		return list
	}
	return append(list, account)
}
