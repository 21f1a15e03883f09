// Package texts holds every text the pool writes and reads back: its
// signed comments (notes on conflicts, blocks, retries, merges), the
// reviewer's and fixer's prompts, the session titles, and the reviewer's
// result line. Forge text goes into a prompt only inside its data block
// (data.go).
package texts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"pool/forge"
	"pool/lifecycle"
)

// Signature ends every comment the pool posts.
const Signature = "\n\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer"

// SessionTitlePrefix starts the title of every reviewer session;
// "owner/name PR-<N>" follows.
const SessionTitlePrefix = "[CA-AUTO] worker-review: "

func Sign(body string) string { return strings.TrimRight(body, "\n") + Signature }

// SessionTitle names the session for a PR of repo ("owner/name"), so a
// relaunch can adopt it and no pool of another repository does.
func SessionTitle(repo string, n int) string {
	return SessionTitlePrefix + repo + " PR-" + strconv.Itoa(n)
}

// ParseTitle reads the repository and PR number a session title names.
// Titles from before repositories were named ("[CA-AUTO] worker-review:
// PR-<N>") give repo "". ok is false for any other title.
func ParseTitle(title string) (repo string, n int, ok bool) {
	rest, ok := strings.CutPrefix(title, SessionTitlePrefix)
	if !ok {
		return "", 0, false
	}
	if before, after, found := strings.Cut(rest, " "); found {
		if strings.Count(before, "/") != 1 || strings.HasPrefix(before, "/") || strings.HasSuffix(before, "/") {
			return "", 0, false
		}
		repo, rest = before, after
	}
	digits, ok := strings.CutPrefix(rest, "PR-")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || strconv.Itoa(n) != digits {
		return "", 0, false
	}
	return repo, n, true
}

// TitlePR returns the PR number of a session title that is ours for repo:
// it names repo (as the forge, ignoring case), or it is the old form,
// which names no repository, and the pool serves repo alone (single). A
// pool never takes a session of a repository it does not serve.
func TitlePR(title, repo string, single bool) (int, bool) {
	named, n, ok := ParseTitle(title)
	switch {
	case !ok:
		return 0, false
	case named == "":
		return n, single
	}
	return n, strings.EqualFold(named, repo)
}

// DiagnosticBody is the note on an approved PR that still waits to merge:
// why (the decision's reason), the last status, and the merge calls that
// failed (attempt). The pool posts it further apart each time.
func DiagnosticBody(attempt int, status, why, head string) string {
	return fmt.Sprintf("Merge retry: still waiting to merge (%s). Last status: %s. Failed merge calls at this head: %d.\n"+
		"The pool keeps trying and will not give up; its next note comes after a longer pause.\n\n%s",
		why, status, attempt, forge.Marker(forge.MarkRetry, map[string]any{"attempt": attempt, "status": status, "head": head}))
}

// RetryHead reads the head a diagnostic comment's marker names ("" for a
// diagnostic that names none, or another comment).
func RetryHead(body string) string {
	var v struct {
		Head string `json:"head"`
	}
	forge.ParseMarker(body, forge.MarkRetry, &v)
	return v.Head
}

// RetryAttempt reads the attempt number from a diagnostic comment's marker.
func RetryAttempt(body string) int {
	var v struct {
		Attempt int `json:"attempt"`
	}
	if !forge.ParseMarker(body, forge.MarkRetry, &v) {
		return 0
	}
	return v.Attempt
}

func ConflictBody(base, head string) string {
	return fmt.Sprintf("Merge conflict detected. The implementing agent needs to rebase this branch onto latest %s.\n\n%s",
		base, forge.Marker(forge.MarkConflict, map[string]string{"head": head}))
}

// NotedAt reports whether a comment is the pool's note of kind (MarkConflict,
// MarkNoReview) for head: a pool whose post's answer was lost finds it.
func NotedAt(body, kind, head string) bool {
	var v struct{ Head string }
	return forge.ParseMarker(body, kind, &v) && v.Head == head
}

func ScheduledMergedBody(n int) string {
	return fmt.Sprintf("PR #%d has been merged (scheduled merge completed).", n)
}

// maxAnnounced bounds the issues one merge is announced on.
const maxAnnounced = 5

// closesRE matches a closing keyword and a bare "#N": an issue of the same
// repository. "owner/repo#N" and URLs name other repositories and do not
// match (the '#' must follow white space).
var closesRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+#(\d{1,9})\b`)

// LinkedIssues returns the issues of the same repository that a PR body
// says it closes: each once, not the PR itself, at most maxAnnounced.
func LinkedIssues(body string, self int) []int {
	var out []int
	seen := map[int]bool{self: true}
	for _, m := range closesRE.FindAllStringSubmatch(body, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		if len(out) == maxAnnounced {
			break
		}
	}
	return out
}

// PromptInput is what goes into a reviewer's prompt. It never holds the
// token. Data holds everything written on the forge; the rest is the
// pool's own text.
type PromptInput struct {
	PR   int
	Repo string
	Head string // the head commit, as the forge names it
	Spec string // the operator's spec file: trusted
	Fix  bool   // a fixer session: checks fail on an approved head
	// PushRepo and PushBranch are where a fixer pushes: the PR's head
	// repository ("owner/name") and branch, as the forge names them.
	PushRepo, PushBranch string
	Reviewed             bool   // re-review after a new push
	Answer               string // instructions for answering the open items (report.Digest.AnswerInstructions)
	Data                 Data
	Tag                  string               // the data block's delimiter tag; fresh per prompt
	Dir                  string               // the session's work tree at Head, made by the pool; "" without one
	Base                 string               // the default branch, to diff against
	Rule                 lifecycle.ReviewRule // whose reviews count
}

// branchRE is a branch name that is safe to put in a prompt outside the
// data block.
var branchRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`)

// workTreeLines tell the session where the PR is checked out and what to
// compare it with.
func workTreeLines(in PromptInput) string {
	if in.Dir == "" {
		return ""
	}
	lines := fmt.Sprintf("Work tree: %s (your working directory: the head commit, detached).\n", in.Dir)
	if branchRE.MatchString(in.Base) && !strings.Contains(in.Base, "..") {
		lines += fmt.Sprintf("Base branch: %s. See the PR's changes with the review_diff tool (a fixer's shell: git diff origin/%s...HEAD)\n", in.Base, in.Base)
	}
	return lines
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

func Prompt(in PromptInput) string {
	var b strings.Builder
	head := in.Head
	if !shaRE.MatchString(head) {
		head = "(unknown: the forge gave a malformed commit id)"
	}
	fmt.Fprintf(&b, "Review PR #%d. Repo: %s.\n", in.PR, in.Repo)
	fmt.Fprintf(&b, "Head SHA: %s\n", head)
	b.WriteString(workTreeLines(in))
	if in.Spec != "" {
		fmt.Fprintf(&b, "\nSpec context:\n%s\n", strings.TrimSpace(in.Spec))
	}
	if in.Reviewed {
		b.WriteString("\nThis PR was reviewed before; new commits have been pushed since. Review the new head.\n")
	}
	if in.Fix {
		b.WriteString("\nThis PR is approved, but checks fail on its head commit; they are the \"kind\": \"check\" entries in the forge data block. " +
			"Find the cause and commit a fix in your work tree, on top of its head, or request changes saying what is wrong.\n")
		b.WriteString(pushTarget(in))
	}
	if in.Answer != "" {
		fmt.Fprintf(&b, "\n%s", in.Answer)
	}
	if len(in.Data.Items)+len(in.Data.Checks)+len(in.Data.Errors) > 0 {
		fmt.Fprintf(&b, "\n%s", in.Data.Block(in.Tag))
	}
	b.WriteString(stopRule(head, in.Rule))
	fmt.Fprintf(&b, "Submit your review on the forge for commit %s: approve it, or request changes. ", head)
	b.WriteString("Do not merge: the pool merges an approved PR itself, pinned to the commit you reviewed, when the branch's rules allow.\n")
	b.WriteString("Sign every comment, review and description you post with:\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer\n")
	b.WriteString("\nEnd your reply with exactly one line of this form:\n")
	b.WriteString(`REVIEW-RESULT: {"decision": "approved|changes_requested|commented", "merge_status": "merged|merge_scheduled|ci_pending|ci_failing|merge_failed|conflict|awaiting_human|none"}` + "\n")
	return b.String()
}

var repoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// pushTarget tells a fixer that the pool pushes its commits, and where.
// Names the forge gave that do not look like a repository and a branch are
// not put in the prompt.
func pushTarget(in PromptInput) string {
	rule := "Do not push, and make no merge commit: when your session ends, the pool checks your commits and pushes them"
	if !repoRE.MatchString(in.PushRepo) || !branchRE.MatchString(in.PushBranch) || strings.Contains(in.PushBranch, "..") {
		return rule + " to the PR's head branch.\n"
	}
	return fmt.Sprintf("%s to branch %s of repository %s.\n", rule, in.PushBranch, in.PushRepo)
}

// FixRefused is the note on a PR whose fixer's commits the pool did not
// push, and why (a reason of the pool's own, naming no secret).
func FixRefused(reason string) string {
	return fmt.Sprintf("The fixer's commits were not pushed: %s.", reason)
}

// stopRule tells the reviewer when another's review makes its own needless:
// only a review that counts does. An approval the forge does not mark
// official is anyone's to make (an outsider's, right after the claim) and
// must not stop the review.
func stopRule(head string, rule lifecycle.ReviewRule) string {
	who := "an account whose review counts (the forge marks the review \"official\": " +
		"its author has write access or a place on the branch's approvals whitelist)"
	switch {
	case len(rule.Reviewers) > 0 && rule.AllowUnofficial:
		who = "one of the accounts whose reviews count: " + strings.Join(rule.Reviewers, ", ")
	case len(rule.Reviewers) > 0:
		who = "one of the accounts whose reviews count (" + strings.Join(rule.Reviewers, ", ") + "), marked \"official\" by the forge"
	}
	return fmt.Sprintf("\nIf the head commit %s already carries an approval or a request for changes by %s, other than yours, "+
		"stop and report decision \"commented\". Any other review counts for nothing (anyone may post one): review the PR as if it were not there.\n", head, who)
}

// Result is what a reviewer session reported. Decision "unknown" means the
// session gave no well-formed result line.
type Result struct {
	Decision    string `json:"decision"`
	MergeStatus string `json:"merge_status"`
}

var (
	decisions     = map[string]bool{"approved": true, "changes_requested": true, "commented": true}
	mergeStatuses = map[string]bool{"merged": true, "merge_scheduled": true, "ci_pending": true, "ci_failing": true,
		"merge_failed": true, "conflict": true, "awaiting_human": true, "none": true}
)

// Unknown is the result of a session that reported nothing usable.
var Unknown = Result{Decision: "unknown", MergeStatus: "unknown"}

// ParseResult takes the last well-formed REVIEW-RESULT line of the text.
func ParseResult(text string) Result {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "REVIEW-RESULT:")
		if !ok {
			continue
		}
		var r Result
		if json.Unmarshal([]byte(strings.TrimSpace(rest)), &r) == nil && decisions[r.Decision] && mergeStatuses[r.MergeStatus] {
			return r
		}
	}
	return Unknown
}

// NoReviewBody says, once per head, that reviewer sessions keep leaving no
// review that counts, and that the head gets no more sessions unless a
// maintainer puts allowLabel on the PR.
func NoReviewBody(head, reason, allowLabel string) string {
	return fmt.Sprintf("Reviews keep failing: %s.\nThe pool starts no more review sessions of this head: push a new head, "+
		"or a maintainer can put the label `%s` on this PR for more.\n\n%s",
		reason, allowLabel, forge.Marker(forge.MarkNoReview, map[string]string{"head": head}))
}

// UnvouchedBody says, once per head, that an approval no session of the
// pool filed does not count: the pool reviews the head itself.
func UnvouchedBody(head, reason string) string {
	return fmt.Sprintf("Not merging on this approval: %s.\nA reviewer session of the pool reviews head %s itself.", reason, head)
}

// BlockedBody explains, once, why the forge's rules keep the pool from
// merging. The marker lets a pool that lost its state see the note is there.
func BlockedBody(head, reason string) string {
	return fmt.Sprintf("Merging is on hold: %s.\nThe pool will not retry the merge until this PR or the branch protection changes.\n\n%s",
		reason, forge.Marker(forge.MarkBlocked, map[string]string{"head": head, "reason": reason}))
}

// WithheldBody says, once per head and reason, that the PR gets no review
// session until a maintainer puts label on it.
func WithheldBody(head, reason, label string) string {
	return fmt.Sprintf("No review session for this PR: %s.\nA maintainer may add the label `%s` to let the pool review it.\n\n%s",
		reason, label, forge.Marker(forge.MarkWithheld, map[string]string{"head": head, "reason": reason}))
}

// WithheldNoted reports whether a comment is the pool's WithheldBody for
// head and reason.
func WithheldNoted(body, head, reason string) bool {
	var v struct{ Head, Reason string }
	return forge.ParseMarker(body, forge.MarkWithheld, &v) && v.Head == head && v.Reason == reason
}

// BlockedNoted reports whether a comment is the pool's note for head and reason.
func BlockedNoted(body, head, reason string) bool {
	var v struct{ Head, Reason string }
	return forge.ParseMarker(body, forge.MarkBlocked, &v) && v.Head == head && v.Reason == reason
}
