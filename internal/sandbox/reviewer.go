package sandbox

import (
	"fmt"
	"regexp"
	"strings"
)

// The scripted reviewer reaches the forge only as the shipped reviewer does:
// through the pool-review command its permissions allow (see SetUpReviewer),
// which holds the reviewer's own token. No token is in its commands or its
// environment, and the pool's token never enters a prompt.

var (
	promptPRRE   = regexp.MustCompile(`Review PR #(\d+)\. Repo: ([^\s]+)\.`)
	promptHeadRE = regexp.MustCompile(`Head SHA: ([0-9a-f]{7,64})`)
)

// PromptTarget reads the PR number, repository and head from a pool prompt.
func PromptTarget(prompt string) (pr string, repo string, head string, ok bool) {
	m := promptPRRE.FindStringSubmatch(prompt)
	h := promptHeadRE.FindStringSubmatch(prompt)
	if m == nil || h == nil {
		return "", "", "", false
	}
	return m[1], m[2], h[1], true
}

// Verdict is what a scripted reviewer does with a PR.
type Verdict struct {
	// Remark posts a commenting review first, so the PR carries two
	// reviews on its head.
	Remark bool
	Event  string // APPROVED, REQUEST_CHANGES or COMMENT; "" posts no review
	// Report overrides the REVIEW-RESULT line; "" reports what happened.
	Report string
}

// WhereCommand is the scripted reviewer's first command: where it runs and
// what is checked out there.
const WhereCommand = "pwd; git log -1 --format=%H"

// Reviewer returns a Script for a reviewer that first looks where it runs
// (WhereCommand), then reviews as decide says with pool-review, and ends
// with a line saying where it ran and a REVIEW-RESULT line. It never
// merges: the pool does.
func Reviewer(decide func(pr string) Verdict) Script {
	return func(prompt string, outputs []string) Turn {
		pr, repo, head, ok := PromptTarget(prompt)
		if !ok {
			return Turn{Text: "I cannot tell which PR to review."}
		}
		v := decide(pr)
		cmds := []string{WhereCommand}
		if v.Remark {
			cmds = append(cmds, reviewCommand(repo, pr, head, "COMMENT"))
		}
		if v.Event != "" {
			cmds = append(cmds, reviewCommand(repo, pr, head, v.Event))
		}
		if len(outputs) < len(cmds) {
			return Turn{Bash: cmds[len(outputs)]}
		}
		return Turn{Text: finalText(v, outputs[0])}
	}
}

// Where reads the directory and commit from WhereCommand's output.
func Where(output string) (dir, head string) {
	dir, head, _ = strings.Cut(strings.TrimSpace(output), "\n")
	return dir, strings.TrimSpace(head)
}

// Approve is the plain happy reviewer.
func Approve(string) Verdict { return Verdict{Event: "APPROVED"} }

// verdictWords are the pool-review verdicts for the forge's review events.
var verdictWords = map[string]string{"APPROVED": "approve", "REQUEST_CHANGES": "request-changes", "COMMENT": "comment"}

// reviewCommand files a review with pool-review, which signs it.
func reviewCommand(repo, pr, head, event string) string {
	return fmt.Sprintf("pool-review review %s#%s --commit %s --verdict %s --body 'Scripted review: %s.'",
		repo, pr, head, verdictWords[event], strings.ToLower(event))
}

// finalText reports where the reviewer ran (from WhereCommand's output)
// and its result.
func finalText(v Verdict, where string) string {
	decision := map[string]string{"APPROVED": "approved", "REQUEST_CHANGES": "changes_requested"}[v.Event]
	if decision == "" {
		decision = "commented"
	}
	dir, head := Where(where)
	ran := fmt.Sprintf("Worked in %s at %s.", dir, head)
	if v.Report != "" {
		return ran + "\n" + v.Report
	}
	return fmt.Sprintf("%s\nReview done.\nREVIEW-RESULT: {\"decision\": %q, \"merge_status\": \"none\"}", ran, decision)
}

// FixerCue is the sentence of a fixer prompt the scripted fixer looks for.
const FixerCue = "checks fail on its head commit"

// FixedFile is the file the scripted fixer writes in its work tree.
const FixedFile = "FIXED.txt"

// Fixer returns a Script that answers fixer prompts (those with FixerCue) as
// the shipped fixer agent may: it writes FixedFile with the write tool and
// commits it, and stops: the pool pushes the commit when the session ends.
// Every other prompt goes to review. No token is in any of it.
func Fixer(review Script) Script {
	return func(prompt string, outputs []string) Turn {
		if !strings.Contains(prompt, FixerCue) {
			return review(prompt, outputs)
		}
		if _, _, _, ok := PromptTarget(prompt); !ok {
			return Turn{Text: "I cannot tell which PR to fix."}
		}
		turns := []Turn{
			{Bash: WhereCommand},
			{Tool: "write", Args: map[string]any{"filePath": FixedFile, "content": "fixed\n"}},
			{Bash: fmt.Sprintf("git add %s && git commit -qm 'Fix the failing check' && git log -1 --format=%%H", FixedFile)},
		}
		if len(outputs) < len(turns) {
			return turns[len(outputs)]
		}
		dir, head := Where(outputs[0])
		return Turn{Text: fmt.Sprintf("Worked in %s at %s. Committed %s.\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"ci_failing\"}",
			dir, head, strings.TrimSpace(outputs[2]))}
	}
}
