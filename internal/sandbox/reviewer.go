package sandbox

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The scripted reviewer works as the shipped reviewer does: through the
// tools of the pool-review tool server its permissions allow (see
// SetUpReviewer), which holds the reviewer's own token. No token is in its
// calls or its environment, and the pool's token never enters a prompt.

// The names the agent server gives the tool server's tools: the server's
// name in the config (MCPServer), an underscore, the tool's.
const (
	MCPServer   = "review"
	ToolPR      = MCPServer + "_pr"
	ToolDiff    = MCPServer + "_diff"
	ToolFiles   = MCPServer + "_files"
	ToolRead    = MCPServer + "_read"
	ToolSearch  = MCPServer + "_search"
	ToolVerdict = MCPServer + "_verdict"
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
	// ReadDiff reads the PR's diff with the diff tool before the review,
	// as a real reviewer does. The end-to-end tests leave it off: what the
	// reviewer reads changes nothing the pool does, and each tool call
	// costs the shared agent server about 0.1 CPU-seconds (a model step),
	// the tool server and the forge more. The sandbox's demo and the
	// benchmarks read it (ReadAndApprove).
	ReadDiff bool
	// Remark files a commenting review first, so the PR carries two
	// reviews on its head.
	Remark bool
	Event  string // APPROVED, REQUEST_CHANGES or COMMENT; "" files no review
	// Report overrides the REVIEW-RESULT line; "" reports what happened.
	Report string
}

// WhereTurn is the scripted reviewer's first call: the PR as the tool
// server shows it, with the work tree it serves and what is checked out
// there (Where).
var WhereTurn = Turn{Tool: ToolPR, Args: map[string]any{}}

// Reviewer returns a Script for a reviewer that first reads its PR
// (WhereTurn) and, if decide says so, the diff, then reviews as decide
// says with the verdict tool, and ends with a line saying where it ran and
// a REVIEW-RESULT line. It never merges: the pool does.
func Reviewer(decide func(pr string) Verdict) Script {
	return func(prompt string, outputs []string) Turn {
		pr, _, head, ok := PromptTarget(prompt)
		if !ok {
			return Turn{Text: "I cannot tell which PR to review."}
		}
		v := decide(pr)
		turns := []Turn{WhereTurn}
		if v.ReadDiff {
			turns = append(turns, Turn{Tool: ToolDiff, Args: map[string]any{}})
		}
		if v.Remark {
			turns = append(turns, VerdictTurn(head, "COMMENT", ""))
		}
		if v.Event != "" {
			turns = append(turns, VerdictTurn(head, v.Event, ""))
		}
		if len(outputs) < len(turns) {
			return turns[len(outputs)]
		}
		return Turn{Text: finalText(v, outputs[0])}
	}
}

// Where reads the work tree and the commit checked out there from the
// output of WhereTurn (or of a shell's `pwd; git log -1 --format=%H`).
func Where(output string) (dir, head string) {
	var v struct {
		WorkTree string `json:"work_tree"`
		TreeHead string `json:"tree_head"`
	}
	if json.Unmarshal([]byte(output), &v) == nil {
		return v.WorkTree, v.TreeHead
	}
	dir, head, _ = strings.Cut(strings.TrimSpace(output), "\n")
	return dir, strings.TrimSpace(head)
}

// Approve is the plain happy reviewer.
func Approve(string) Verdict { return Verdict{Event: "APPROVED"} }

// ReadAndApprove approves after reading the diff.
func ReadAndApprove(string) Verdict { return Verdict{ReadDiff: true, Event: "APPROVED"} }

// verdictWords are the verdict tool's words for the forge's review events.
var verdictWords = map[string]string{"APPROVED": "approve", "REQUEST_CHANGES": "request-changes", "COMMENT": "comment"}

// VerdictTurn files a review of commit with the verdict tool, which signs
// and marks it; body "" says which verdict it is.
func VerdictTurn(commit, event, body string) Turn {
	if body == "" {
		body = "Scripted review: " + strings.ToLower(event) + "."
	}
	return Turn{Tool: ToolVerdict, Args: map[string]any{"verdict": verdictWords[event], "commit": commit, "body": body}}
}

// finalText reports where the reviewer ran (from WhereTurn's output)
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

// whereCommand is where a shell runs and what is checked out there.
const whereCommand = "pwd; git log -1 --format=%H"

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
			{Bash: whereCommand},
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
