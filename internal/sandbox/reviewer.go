package sandbox

import (
	"fmt"
	"regexp"
	"strings"
)

// The scripted reviewer's shell commands reach the forge through these
// variables, set in the agent server's environment: the reviewer has its own
// account and token, and the pool's token never enters a prompt.
const (
	EnvForgeURL      = "SANDBOX_FORGE_URL"
	EnvReviewerToken = "SANDBOX_REVIEWER_TOKEN"
)

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
const WhereCommand = "pwd; git rev-parse HEAD 2>&1"

// Reviewer returns a Script for a reviewer that first looks where it runs
// (WhereCommand), then reviews as decide says, and ends with a line saying
// where it ran and a REVIEW-RESULT line. It never merges: the pool does.
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

func reviewCommand(repo, pr, head, event string) string {
	body := "Scripted review: " + strings.ToLower(event) + `.\n\n---\n**Automated by CleverAgents Bot**\nSupervisor: PR Review | Agent: ca-continuous-pr-reviewer`
	payload := fmt.Sprintf(`{"event":"%s","body":"%s","commit_id":"%s"}`, event, body, head)
	return fmt.Sprintf(`code=$(curl -s -o /dev/null -w '%%{http_code}' -X POST -H "Authorization: token $%s" -H 'Content-Type: application/json' "$%s/api/v1/repos/%s/pulls/%s/reviews" -d '%s'); echo "review=$code"`,
		EnvReviewerToken, EnvForgeURL, repo, pr, payload)
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

// Fixer returns a Script that answers fixer prompts (those with FixerCue)
// by committing a fix in its working directory and pushing it to the PR's
// branch, named by branch, with the reviewer's own token; every other
// prompt goes to review. The pool's token is in none of it.
func Fixer(branch func(pr string) string, review Script) Script {
	return func(prompt string, outputs []string) Turn {
		if !strings.Contains(prompt, FixerCue) {
			return review(prompt, outputs)
		}
		pr, repo, _, ok := PromptTarget(prompt)
		if !ok {
			return Turn{Text: "I cannot tell which PR to fix."}
		}
		cmds := []string{WhereCommand, pushCommand(repo, branch(pr))}
		if len(outputs) < len(cmds) {
			return Turn{Bash: cmds[len(outputs)]}
		}
		dir, head := Where(outputs[0])
		return Turn{Text: fmt.Sprintf("Worked in %s at %s. %s\nREVIEW-RESULT: {\"decision\": \"commented\", \"merge_status\": \"ci_failing\"}",
			dir, head, strings.TrimSpace(outputs[1]))}
	}
}

// pushCommand commits a file that fixes the check and pushes the commit to
// branch of repo, authenticating with the reviewer's token through git's
// environment (never a URL or a config file).
func pushCommand(repo, branch string) string {
	return fmt.Sprintf(`echo fixed > FIXED.txt && git add FIXED.txt && `+
		`git -c user.name=reviewer -c user.email=reviewer@example.com commit -qm "Fix the failing check" && `+
		`git -c "http.extraHeader=Authorization: token $%s" push -q "$%s/%s.git" HEAD:refs/heads/%s 2>&1; echo "push=$?"`,
		EnvReviewerToken, EnvForgeURL, repo, branch)
}
