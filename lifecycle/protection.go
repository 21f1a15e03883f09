package lifecycle

import (
	"fmt"
	"strings"

	"pool/forge"
)

// The forge's branch protection is the floor of every merge: the pool never
// calls merge for a PR the protection would refuse. These functions read the
// protection as the forge applies it (Gitea's and Forgejo's
// models/issues/pull.go: GetGrantedApprovalsCount and the MergeBlockedBy
// checks) and say why a merge would be refused, in words fit for the PR.

// protectionRefuses returns why the protection refuses to merge the
// observed, approved PR now, or "". A branch behind its base is no refusal
// when the policy updates it (mergeOrWait).
func protectionRefuses(pol Policy, o Observation) string {
	p := o.Protection
	switch {
	case !p.UserCanMerge:
		return "the pool's account may not merge into this branch (it needs write access, and a place on the merge whitelist when one is enabled)"
	case p.RequiredApprovals > 0 && grantedApprovals(p, o.Reviews) < p.RequiredApprovals:
		return fmt.Sprintf("needs %d approvals; has %d", p.RequiredApprovals, grantedApprovals(p, o.Reviews))
	case p.BlockOnRejected && officialRejection(o.Reviews):
		return "an official review requests changes, and the branch protection blocks on rejected reviews"
	case p.BlockOnOfficialRequests && officialRequestPending(o.Reviews):
		return "an official review was requested and is not given yet, and the branch protection waits for it"
	case p.BlockOnOutdated && o.Behind && !pol.updates(p):
		return "the branch is behind its base, and the branch protection blocks outdated branches: it needs an update"
	}
	return ""
}

// reviewerCannotCount returns why no review the pool's reviewers give can
// count under the protection, or "": an approvals whitelist that names none
// of the configured reviewer accounts (and no team, which could hold them).
func reviewerCannotCount(p Policy, prot forge.Protection) string {
	if !prot.Full || !prot.ApprovalsWhitelist || len(p.Rule.Reviewers) == 0 || p.Rule.AllowUnofficial ||
		len(prot.ApprovalsWhitelistTeams) > 0 {
		return ""
	}
	for _, r := range p.Rule.Reviewers {
		if hasAccount(prot.ApprovalsWhitelistUsers, r) {
			return ""
		}
	}
	return fmt.Sprintf("no reviewer account (%s) is on the branch's approvals whitelist, so no review by them can count",
		joinAccounts(p.Rule.Reviewers))
}

// grantedApprovals counts the approvals the forge counts toward the
// required number: official, not dismissed, and not stale when the
// protection ignores stale approvals.
func grantedApprovals(p forge.Protection, reviews []forge.Review) int {
	n := 0
	for _, r := range reviews {
		if r.State == forge.ReviewApproved && r.Official && !r.Dismissed && !(p.IgnoreStale && r.Stale) {
			n++
		}
	}
	return n
}

func officialRejection(reviews []forge.Review) bool {
	for _, r := range reviews {
		if r.State == forge.ReviewRequestChanges && r.Official && !r.Dismissed {
			return true
		}
	}
	return false
}

func officialRequestPending(reviews []forge.Review) bool {
	for _, r := range reviews {
		if r.State == forge.ReviewRequested && r.Official {
			return true
		}
	}
	return false
}

// RequiredContexts are the status context patterns the protection waits
// for. A status check with no contexts named waits for at least one status
// (the forge then calls a head without any pending), hence "*".
func RequiredContexts(p forge.Protection) []string {
	switch {
	case !p.StatusCheck:
		return nil
	case len(p.StatusContexts) == 0:
		return []string{"*"}
	}
	return p.StatusContexts
}

func joinAccounts(accounts []string) string {
	if len(accounts) == 0 {
		return "an unknown account"
	}
	return nameSome(accounts)
}

// namedAtMost is how many names of a list anyone on the forge can make
// long (approvals, issue dependencies) a reason names; the rest are
// counted. A reason goes into a comment.
const namedAtMost = 10

// nameSome joins the first namedAtMost names and counts the others.
func nameSome(names []string) string {
	if len(names) <= namedAtMost {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:namedAtMost], ", "), len(names)-namedAtMost)
}
