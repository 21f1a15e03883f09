package lifecycle

import (
	"slices"
	"strings"

	"pool/forge"
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
//
// With Sessions, a review counts only when a session of the pool filed it
// for its head (forge.Review.Vouched: its session mark checks out), or its
// author is one of Humans: the reviewer account's approval that no session
// of the pool produced (a session misled into reviewing another PR, a
// stolen token) merges nothing.
type ReviewRule struct {
	Reviewers       []string
	AllowUnofficial bool
	Sessions        bool
	Humans          []string
}

// Listed reports whether the account is one of the configured reviewers.
func (r ReviewRule) Listed(account string) bool { return hasAccount(r.Reviewers, account) }

// Counts reports whether review v counts for a PR by author at head.
func (r ReviewRule) Counts(author, head string, v forge.Review) bool {
	return v.CommitID == head && !v.Stale && r.trusted(author, v) && r.filed(v)
}

// filed reports whether the review came from where the rule wants it: a
// session of the pool, or a listed human.
func (r ReviewRule) filed(v forge.Review) bool {
	return !r.Sessions || v.Vouched || hasAccount(r.Humans, v.Author)
}

// CountedOn reports whether account has a review on head that counts for a
// PR by author: one of the reviews HeadVerdict weighs.
func (r ReviewRule) CountedOn(author, head, account string, reviews []forge.Review) bool {
	for _, rv := range reviews {
		if strings.EqualFold(rv.Author, account) && r.Counts(author, head, rv) {
			return true
		}
	}
	return false
}

// trusted is Counts without the head: the review's author speaks for the
// review process on this PR, whichever commit the review was on.
func (r ReviewRule) trusted(author string, v forge.Review) bool {
	if v.Dismissed || strings.EqualFold(v.Author, author) || v.Author == "" {
		return false
	}
	if len(r.Reviewers) > 0 && !r.Listed(v.Author) {
		return false
	}
	switch v.State {
	case forge.ReviewApproved, forge.ReviewRequestChanges:
		return v.Official || (r.AllowUnofficial && r.Listed(v.Author))
	case forge.ReviewComment:
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
	// Unvouched are the authors of approvals on the head that would count
	// but that no session of the pool filed (ReviewRule.Sessions).
	Unvouched []string
	// Carried: the verdict was given to the head the pool updated, and
	// carries over to this one (Policy.Approval): its approval, or a
	// request for changes that stands (RequestStands).
	Carried bool
}

// HeadVerdict folds a PR's reviews into the verdict on its head: each
// counting account's latest approval or request for changes decides for
// that account.
func (r ReviewRule) HeadVerdict(author, head string, reviews []forge.Review) Verdict {
	latest := map[string]forge.Review{}
	commented := false
	var v Verdict
	for _, rv := range reviews {
		if !r.Counts(author, head, rv) {
			switch {
			case rv.State != forge.ReviewApproved || rv.CommitID != head || rv.Dismissed:
			case !rv.Stale && r.trusted(author, rv):
				v.Unvouched = appendOnce(v.Unvouched, rv.Author)
			default:
				v.Uncounted = appendOnce(v.Uncounted, rv.Author)
			}
			continue
		}
		if rv.State == forge.ReviewComment {
			commented = true
			continue
		}
		keepLatest(latest, rv)
	}
	for _, rv := range latest {
		switch rv.State {
		case forge.ReviewRequestChanges:
			v.State = forge.ReviewRequestChanges
		case forge.ReviewApproved:
			v.Approvers = appendOnce(v.Approvers, rv.Author)
		}
	}
	switch {
	case v.State != "":
	case len(v.Approvers) > 0:
		v.State = forge.ReviewApproved
	case commented:
		v.State = forge.ReviewComment
	}
	return v
}

// keepLatest keeps in latest each account's review with the highest id:
// the one verdict of the account's that counts.
func keepLatest(latest map[string]forge.Review, rv forge.Review) {
	who := strings.ToLower(rv.Author)
	if cur, ok := latest[who]; !ok || rv.ID > cur.ID {
		latest[who] = rv
	}
}

// Voices are the accounts whose word on the PR the pool takes as its
// review process's own: the pool's account, and every account with a
// counted review on the PR at any commit. Only their reply markers answer
// an item, and only their activity keeps a claim alive.
func (r ReviewRule) Voices(self, author string, reviews []forge.Review) map[string]bool {
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

// Approval is the verdict on the PR's head the pool acts on, under policy
// p with the pool's memory t: the counted reviews on the head, or, when
// there are none, the approval of the head the pool updated, carried over
// (CarriesOver). The supervisor decides by it and reads a head's checks
// when it approves.
func (p Policy) Approval(t Track, o Observation) Verdict {
	weighed("approval")
	t = t.atHead(o.HeadSHA, o.Now)
	v := p.Rule.HeadVerdict(o.Author, o.HeadSHA, o.Reviews)
	if v.State != forge.ReviewRequestChanges && p.Rule.RequestStands(o.Author, t.Update, o) {
		v.State, v.Carried = forge.ReviewRequestChanges, true
		return v
	}
	if v.State != "" || !p.Rule.CarriesOver(t.Update, o) {
		return v
	}
	carried := p.Rule.HeadVerdict(o.Author, t.Update.From, o.Reviews)
	carried.Uncounted, carried.Unvouched, carried.Carried = v.Uncounted, v.Unvouched, true
	return carried
}

// CarriesOver reports whether the approval of the head the pool updated
// (u.From) counts for the head o shows now. All must hold:
//   - the pool made the head: it is the very commit the pool read right
//     after the forge's update (a force-push after it, even of a merge with
//     the right parents, is a new head); its tree is the merge of the
//     approved head and the base tip (where the pool's clone could check);
//     for a merge, its parents are the approved head and the base tip the
//     pool saw; for a rebase, the PR's diff is byte for byte the approved
//     one. A head with anything else in it (an author pushed during the
//     update) is reviewed again;
//   - the protection, where the pool can read it whole, does not dismiss
//     stale approvals (the operator asked for a review of every push);
//   - the forge itself still counts the approval, on the reviews read
//     after the forge took in the new head: official, not dismissed, not
//     stale, by an account the rule counts.
//
// It is safe because the only new content is the base, which was reviewed
// and merged already, and the required checks test the combination before
// the merge. A token that cannot read the rule whole (not a repository
// admin's) cannot see whether the forge dismisses stale approvals; there
// the forge's own flags on the approval decide: a forge that found the
// PR's content changed by the push marks the approval stale (Gitea 1.26,
// Forgejo: checkIfPRContentChanged, then MarkReviewsAsStale and, with
// dismiss_stale_approvals, DismissApprovalReviews), and a stale or
// dismissed approval carries nothing. The tree checks above hold for
// every token: the forge's flags alone never carry an approval.
func (r ReviewRule) CarriesOver(u HeadUpdate, o Observation) bool {
	switch {
	case !u.Made() || o.HeadSHA == u.From:
		return false
	case o.Protection.Full && o.Protection.DismissStale:
		return false
	case !madeBy(u, o):
		return false
	}
	official := r // unofficial approvals do not carry over
	official.AllowUnofficial = false
	v := official.HeadVerdict(o.Author, u.From, o.Reviews)
	return v.State == forge.ReviewApproved
}

// RequestStands reports whether a counted account's request for changes
// stands for the head o shows although it was filed on another commit: the
// account's latest counted verdict asks for changes, on the head or on a
// commit whose content the head only carries on with. That is
//   - the head the pool's own update made this head from (u.From, madeBy);
//   - or a parent of the head, a merge of two commits, where the forge has
//     not marked the request stale: it found the PR's content unchanged
//     by the push (another pool's update, or the author's "update branch").
//
// A head that differs from the one they turned down by the base alone
// answers nothing; only new content (the author's push, which the forge
// marks their request stale for) or their own approval does. The forge
// agrees: an official request for changes no one dismissed blocks a merge
// whatever commit it was on (block_on_rejected_reviews). Without this, a
// request filed while an update was in flight, or by a session on the
// head before an update, was weighed on a head no longer shown, and the
// new head was reviewed and merged as if no one had spoken
// (TestARequestForChangesBeforeTheUpdateStands,
// TestARequestOnTheMergedParentStands). A request two merges back is not
// seen: the pools read the head's parents only.
func (r ReviewRule) RequestStands(author string, u HeadUpdate, o Observation) bool {
	latest := map[string]forge.Review{}
	for _, rv := range o.Reviews {
		if !r.onHeadContent(rv, u, o) || !r.trusted(author, rv) || !r.filed(rv) {
			continue
		}
		if rv.State == forge.ReviewApproved || rv.State == forge.ReviewRequestChanges {
			keepLatest(latest, rv)
		}
	}
	for _, rv := range latest {
		if rv.State == forge.ReviewRequestChanges {
			return true
		}
	}
	return false
}

// onHeadContent reports whether review rv was filed on the head o shows
// or on a commit whose content the head carries on with unchanged
// (RequestStands).
func (r ReviewRule) onHeadContent(rv forge.Review, u HeadUpdate, o Observation) bool {
	switch {
	case rv.CommitID == o.HeadSHA:
		return true
	case u.Made() && rv.CommitID == u.From && o.HeadSHA != u.From && madeBy(u, o):
		return true
	}
	return len(o.HeadParents) == 2 && slices.Contains(o.HeadParents, rv.CommitID) && !rv.Stale
}

// requestOffHead reports whether a counted account's request for changes
// on another commit than the head, not marked stale, is among o's
// reviews: then whether it stands takes the head's parents.
func (r ReviewRule) requestOffHead(o Observation) bool {
	for _, rv := range o.Reviews {
		if rv.State == forge.ReviewRequestChanges && rv.CommitID != o.HeadSHA && !rv.Stale &&
			r.trusted(o.Author, rv) && r.filed(rv) {
			return true
		}
	}
	return false
}

// madeBy reports whether the observed head is what the pool's update of
// u.From makes.
func madeBy(u HeadUpdate, o Observation) bool {
	if o.HeadSHA != u.Produced || o.TreeDiffers {
		return false
	}
	switch u.Style {
	case "rebase":
		return u.Diff != "" && o.DiffHash == u.Diff
	case StyleTrain: // a car: the base tip first, the approved head second
		return len(o.HeadParents) == 2 && o.HeadParents[0] == u.Base && o.HeadParents[1] == u.From
	}
	return len(o.HeadParents) == 2 && o.HeadParents[0] == u.From && o.HeadParents[1] == u.Base
}
