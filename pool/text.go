package pool

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"pool/forgejo"
)

// Signature ends every comment the pool posts.
const Signature = "\n\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer"

// SessionTitlePrefix starts the title of every reviewer session; the PR number follows.
const SessionTitlePrefix = "[CA-AUTO] worker-review: PR-"

func sign(body string) string { return strings.TrimRight(body, "\n") + Signature }

// sessionTitle names the session for a PR, so a relaunch can adopt it.
func sessionTitle(n int) string { return SessionTitlePrefix + strconv.Itoa(n) }

// titlePR returns the PR number a session title names, if it is one of ours.
func titlePR(title string) (int, bool) {
	rest, ok := strings.CutPrefix(title, SessionTitlePrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

func diagnosticBody(attempt int, status string) string {
	marker, _ := json.Marshal(map[string]any{"attempt": attempt, "status": status})
	return fmt.Sprintf("Merge retry attempt %d. Last status: %s.\nStill retrying — will not give up. Invoking CI fixer if needed.\n\n<!-- pool-retry %s -->",
		attempt, status, marker)
}

var retryMarkerRE = regexp.MustCompile(`<!-- pool-retry (\{.*?\}) -->`)

// retryAttempt reads the attempt number from a diagnostic comment's marker.
func retryAttempt(body string) int {
	m := retryMarkerRE.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	var v struct {
		Attempt int `json:"attempt"`
	}
	if json.Unmarshal([]byte(m[1]), &v) != nil {
		return 0
	}
	return v.Attempt
}

func conflictBody(base string) string {
	return fmt.Sprintf("Merge conflict detected. The implementing agent needs to rebase this branch onto latest %s.", base)
}

func scheduledMergedBody(n int) string {
	return fmt.Sprintf("PR #%d has been merged (scheduled merge completed).", n)
}

var closesRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)`)

// linkedIssues returns the issues a PR body says it closes.
func linkedIssues(body string) []int {
	var out []int
	for _, m := range closesRE.FindAllStringSubmatch(body, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// promptInput is what goes into a reviewer's prompt. It never holds the token.
type promptInput struct {
	PR       int
	Repo     string
	Head     string
	Spec     string
	Retry    bool             // previously approved: focus on merge
	Failing  []forgejo.Status // for a fixer session
	Style    string
	Reviewed bool   // re-review after a new push
	Items    string // open review items (pool tick's prompt section)
}

func prompt(in promptInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Review PR #%d. Repo: %s.\n", in.PR, in.Repo)
	fmt.Fprintf(&b, "Head SHA: %s\n", in.Head)
	if in.Spec != "" {
		fmt.Fprintf(&b, "\nSpec context:\n%s\n", strings.TrimSpace(in.Spec))
	}
	if in.Reviewed {
		b.WriteString("\nThis PR was reviewed before; new commits have been pushed since. Review the new head.\n")
	}
	if in.Retry {
		b.WriteString("\nThis PR was previously approved. Focus on merge.\n")
	}
	if in.Items != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(in.Items))
	}
	if len(in.Failing) > 0 {
		b.WriteString("\nFailing checks on the head commit:\n")
		for _, s := range in.Failing {
			fmt.Fprintf(&b, "- %s: %s (%s) %s\n", s.Context, s.State, s.Description, s.TargetURL)
		}
		b.WriteString("Find the cause and push a fix to the PR's branch, or request changes saying what is wrong.\n")
	}
	fmt.Fprintf(&b, "\nIf the head commit %s already carries a review by another reviewer, stop and report decision \"commented\".\n", in.Head)
	fmt.Fprintf(&b, "Submit your review on the forge for commit %s. If you approve and the checks allow, merge with style %q and head_commit_id %s.\n", in.Head, in.Style, in.Head)
	b.WriteString("Sign every comment, review and description you post with:\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer\n")
	b.WriteString("\nEnd your reply with exactly one line of this form:\n")
	b.WriteString(`REVIEW-RESULT: {"decision": "approved|changes_requested|commented", "merge_status": "merged|merge_scheduled|ci_pending|ci_failing|merge_failed|conflict|awaiting_human|none"}` + "\n")
	return b.String()
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
