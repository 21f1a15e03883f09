package lifecycle

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"pool/forge"
)

// A merge the forge refuses for a rule (the storage quota, a branch behind
// its base, missing approvals, checks, ...) is learned from: the head waits
// with one note, no attempt counted, and no merge call before the back-off
// ends (it grows with each refusal) or something the rule depends on
// changes: the head (a new head starts over), the base, the checks, the
// reviews, the protection, or the PR itself (a comment, a label).

// A refusal no change the pool can see cures (a hook that rejects the
// push, a server error that persists, an update the forge will not make)
// backs off up to longHold, not RetryMax: hours, not a call every half
// hour. A server error is noted only from the serverErrorNoteAfter-th at a
// head on: one is often a proxy's hiccup.
const (
	longHold             = 8 * time.Hour
	serverErrorNoteAfter = 3
)

// The refusals of the forge that are no rule of the protection.
const (
	ruleUpdateRefused = "update_refused" // the pool's update of a head branch (403, 4xx)
	ruleUpdateFailed  = "update_failed"  // the update answered 5xx (an AGit PR's branch)
	ruleServerError   = "server_error"   // the merge answered 5xx
)

// refused records the forge's refusal of the merge (or update) of head.
func refused(p Policy, t Track, head string, res forge.MergeResult, now time.Time) (Track, Action) {
	rule := res.Rule
	if rule == "" {
		rule = forge.RefusalRule(res.Status, res.Message)
	}
	t.Refusals++
	t.Refused = rule
	t.RefusedUntil = now.Add(forge.Backoff{Base: p.RetryBase, Max: holdMax(p, rule)}.Delay(t.Refusals, 0))
	t.RefusedSeen, t.RefusedOn = time.Time{}, ""
	t.LastStatus = fmt.Sprintf("%s (HTTP %d: %s)", res.Outcome, res.Status, res.Message)
	return holdingRefused(t, head)
}

// holdingRefused is the wait of a refused head, with one note per head and
// reason (a server error's only once it persists).
func holdingRefused(t Track, head string) (Track, Action) {
	if serverError(t.Refused) && t.Refusals < serverErrorNoteAfter {
		t.State, t.Blocked = refusedState(t.Refused), ""
		return t, Action{Kind: Wait, Reason: "backing off after a server error: " + t.LastStatus}
	}
	return blockedAs(refusedState(t.Refused), t, head, refusalReason(t.Refused))
}

func serverError(rule string) bool { return rule == ruleServerError || rule == ruleUpdateFailed }

// RefusedForARule reports whether the forge refused a merge (or update) of
// the head for a rule of its own (not enough approvals, a hook, the quota,
// an update it does not allow): a head it will likely refuse again. A
// server error (5xx) is no such refusal: the next call may well pass.
func (t Track) RefusedForARule() bool { return t.Refusals > 0 && !serverError(t.Refused) }

// holdMax is the longest wait after a refusal for rule.
func holdMax(p Policy, rule string) time.Duration {
	switch rule {
	case forge.RulePushRejected, ruleServerError, ruleUpdateFailed, ruleUpdateRefused:
		return max(p.RetryMax, longHold)
	}
	return p.RetryMax
}

// holdRefused reports whether a refused head still waits: the back-off
// runs and nothing the refusal depends on changed since the first decision
// after it. A refusal for a branch behind its base that the pool will
// update holds nothing: the update is its cure.
func holdRefused(p Policy, t Track, o Observation) (Track, bool) {
	if t.Refusals == 0 || (t.Refused == forge.RuleOutdated && o.Behind && o.MayUpdate && p.updates(o.Protection)) {
		return t, false
	}
	if (t.Refused == ruleUpdateRefused || t.Refused == ruleUpdateFailed) && !o.Behind {
		return t, false // a refused update holds no merge of a head that needs none
	}
	on := dependsOn(o)
	if t.RefusedOn == "" {
		t.RefusedSeen, t.RefusedOn = o.Updated, on
	}
	return t, o.Now.Before(t.RefusedUntil) && !o.Updated.After(t.RefusedSeen) && on == t.RefusedOn
}

// dependsOn sums up what a refused merge depends on besides the head: the
// base, the reviews, the checks and the protection.
func dependsOn(o Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "base %s;", o.BaseSHA)
	for _, r := range o.Reviews {
		fmt.Fprintf(&b, "review %d %s %s %v %v %v;", r.ID, r.State, r.CommitID, r.Stale, r.Dismissed, r.Official)
	}
	checks := make([]string, 0, len(o.Checks))
	for _, c := range o.Checks {
		checks = append(checks, fmt.Sprintf("check %d %s %s;", c.ID, c.Context, c.State))
	}
	sort.Strings(checks)
	b.WriteString(strings.Join(checks, ""))
	fmt.Fprintf(&b, "protection %+v", o.Protection)
	return b.String()
}

func refusedState(rule string) State {
	if rule == forge.RuleQuota {
		return QuotaExceeded
	}
	return MergeRefused
}

// retryNote is what every refusal note ends with.
const retryNote = "The pool tries again after a pause that grows with each refusal, and at once when the head, the base, " +
	"the checks, the reviews, the protection or the PR change"

// refusalReasons say, in the pool's words, why the forge refused a merge:
// the forge's own words stay in the logs.
var refusalReasons = map[string]string{
	forge.RuleQuota: "the forge refused the merge (HTTP 413): the storage quota of the repository's owner is exceeded. " +
		"The pool tries again after a pause that grows with each refusal, and at once when the PR changes; free space or raise the quota",
	forge.RuleOutdated:        "the forge refused the merge: the branch is behind its base, and the branch protection blocks outdated branches",
	forge.RuleStatusCheck:     "the forge refused the merge: not all required status checks are successful",
	forge.RuleApprovals:       "the forge refused the merge: it does not have enough approvals",
	forge.RuleRejected:        "the forge refused the merge: an official review requests changes",
	forge.RuleOfficialRequest: "the forge refused the merge: an official review was requested and is not given yet",
	forge.RuleProtectedFiles:  "the forge refused the merge: it changes protected files",
	forge.RuleSigned:          "the forge refused the merge: the commits must be signed",
	forge.RuleMergeWhitelist:  "the forge refused the merge: the pool's account may not merge into this branch",
	forge.RuleWorkInProgress:  "the forge refused the merge: the PR is marked work in progress",
	forge.RuleArchived:        "the forge refused the merge: the repository is archived",
	forge.RulePushRejected: "the forge refused the merge: a hook of the repository rejected its push (PushRejected; " +
		"the hook's words are in the pool's log). Change what the hook refuses, or merge by hand",
	ruleServerError: "the forge answered the merge with a server error again and again (its answer is in the pool's log)",
	ruleUpdateFailed: "the branch is behind its base and must be updated before it merges, but the forge answered the pool's " +
		"update with a server error again and again (it cannot update the head branch of an AGit PR). Update it by hand",
	ruleUpdateRefused: "the branch is behind its base and must be updated before it merges, but the forge refused the pool's " +
		"update (the pool's account may not push to the branch, or the forge could not update it). Update it, or let the account push",
}

func refusalReason(rule string) string {
	if rule == forge.RuleQuota {
		return refusalReasons[rule]
	}
	if r, ok := refusalReasons[rule]; ok {
		return r + ". " + retryNote
	}
	return "the forge refused the merge for a rule the pool does not know (its answer is in the pool's log). " + retryNote
}

// Learn adds to the protection the pool read what a refusal of the forge
// taught about the rule it could not read (a token that does not
// administer the repository reads only the branch summary), and reports
// whether that was new. Only a rule the pool acts on is learned: a branch
// behind its base is blocked (it is then updated before its merge).
func Learn(prot forge.Protection, rule string) (forge.Protection, bool) {
	if rule != forge.RuleOutdated || prot.BlockOnOutdated {
		return prot, false
	}
	prot.BlockOnOutdated = true
	return prot, true
}

// Unreadable lists the settings of the protection rule the token cannot
// read (none when it reads the whole rule, or the branch is unprotected),
// as the forge names them.
func Unreadable(prot forge.Protection) []string {
	if !prot.Protected || prot.Full {
		return nil
	}
	return []string{forge.RuleOutdated, "dismiss_stale_approvals", "ignore_stale_approvals", forge.RuleRejected,
		forge.RuleOfficialRequest, "approvals_whitelist", forge.RuleSigned, forge.RuleProtectedFiles}
}
