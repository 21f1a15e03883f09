package lifecycle

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"pool/forge"
)

// Check is the newest status of one context on a commit. The supervisor,
// `pool report` and `pool tick` read statuses through Checks and judge them
// with the methods below, so they agree on what a status means.
type Check struct {
	ID          int64     `json:"id"`
	Context     string    `json:"context"`
	State       string    `json:"state"`
	URL         string    `json:"target_url"`
	Description string    `json:"description"`
	Created     time.Time `json:"created_at"`
	// Superseded marks a cancelled run after which a newer run of the same
	// workflow reported on the same commit: not a failure.
	Superseded bool `json:"superseded,omitempty"`
}

// Status states as the forge names them.
const (
	statusSuccess = "success"
	statusWarning = "warning"
	statusFailure = "failure"
	statusError   = "error"
)

// Failed reports whether the check counts as a CI failure. A warning does:
// Gitea counts it a failure and Forgejo passes a required context only on
// success, so neither merges on it (FACTS, "Where Forgejo differs").
func (c Check) Failed() bool {
	return !c.Superseded && (c.State == statusFailure || c.State == statusError || c.State == statusWarning)
}

// Passed reports whether the check counts as passed: success only.
func (c Check) Passed() bool { return c.State == statusSuccess }

// Pending reports whether the check has not reached a result. A state the
// forge did not document is not a result either.
func (c Check) Pending() bool { return !c.Superseded && !c.Failed() && !c.Passed() }

// Cancelled reports whether the check's run was cancelled (see cancelled).
func (c Check) Cancelled() bool { return c.cancelled() }

// cancelled reports whether the status says its run was cancelled: Forgejo
// Actions reports "Has been cancelled", Woodpecker "Pipeline was canceled",
// both with state failure.
func (c Check) cancelled() bool {
	if c.State != statusFailure && c.State != statusError {
		return false
	}
	d := strings.ToLower(c.Description)
	return strings.Contains(d, "cancelled") || strings.Contains(d, "canceled")
}

// Checks keeps the newest status per context from a commit's full status
// history and marks superseded cancellations. The result is sorted by
// context.
func Checks(history []forge.Status) []Check {
	newest := forge.NewestPerContext(history)
	out := make([]Check, 0, len(newest))
	for _, s := range newest {
		c := Check{ID: s.ID, Context: s.Context, State: s.State, URL: s.TargetURL,
			Description: s.Description, Created: s.Created}
		c.Superseded = c.cancelled() && rerunSince(c, history)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Context < out[j].Context })
	return out
}

// rerunSince reports whether a newer run of the cancelled check's workflow
// has reported since: a later status from another context of the same
// workflow, whatever it says (a newer cancellation stands for itself).
// Without a workflow name there is no shortcut: the cancellation stands.
func rerunSince(cancelled Check, history []forge.Status) bool {
	wf := workflowOf(cancelled.Context)
	if wf == "" {
		return false
	}
	for _, s := range history {
		if s.ID > cancelled.ID && s.Context != cancelled.Context && workflowOf(s.Context) == wf {
			return true
		}
	}
	return false
}

var (
	// Forgejo Actions: "<workflow> / <job> (<event>)".
	actionsContextRE = regexp.MustCompile(`^(.+?) / .+ \([^()]+\)$`)
	// Woodpecker: "ci/woodpecker/<event>/<workflow>".
	woodpeckerContextRE = regexp.MustCompile(`^ci/woodpecker/[^/]+/(.+)$`)
)

// workflowOf names the workflow a status context belongs to, or "" when the
// context follows no known naming.
func workflowOf(context string) string {
	if m := actionsContextRE.FindStringSubmatch(context); m != nil {
		return "actions:" + m[1]
	}
	if m := woodpeckerContextRE.FindStringSubmatch(context); m != nil {
		return "woodpecker:" + m[1]
	}
	return ""
}

// Summary is where a head's checks stand for merging.
type Summary string

const (
	// ChecksNone: nothing reported and nothing required. Unknown, not
	// green: Decide merges such a head only after Policy.ChecksGrace.
	ChecksNone    Summary = "none"
	ChecksPending Summary = "pending" // a check runs, or a required context has not reported
	ChecksGreen   Summary = "success"
	ChecksFailing Summary = "failure"
)

// Summarize folds a head's checks into one Summary. Every check counts
// (a failing check that the protection does not require still fails: the
// pool is stricter than the forge), superseded cancellations do not, and
// each required context pattern must be matched by a passing check.
func Summarize(checks []Check, required []string) Summary {
	weighed("summary")
	out := ChecksGreen
	counted := 0
	for _, c := range checks {
		switch {
		case c.Superseded:
			continue
		case c.Failed():
			return ChecksFailing
		case c.Pending():
			out = ChecksPending
		}
		counted++
	}
	for _, pattern := range required {
		if !anyPassed(checks, pattern) {
			out = ChecksPending
		}
	}
	if counted == 0 && len(required) == 0 {
		return ChecksNone
	}
	return out
}

// MissingRequired lists the required context patterns no passing check
// matches yet.
func MissingRequired(checks []Check, required []string) []string {
	var out []string
	for _, pattern := range required {
		if !anyPassed(checks, pattern) {
			out = append(out, pattern)
		}
	}
	return out
}

func anyPassed(checks []Check, pattern string) bool {
	for _, c := range checks {
		if c.Passed() && contextMatches(pattern, c.Context) {
			return true
		}
	}
	return false
}

// contextMatches applies a protection's status context pattern the way the
// forge does (a glob without path separators: '*' also spans '/'); a
// malformed pattern matches only itself.
func contextMatches(pattern, context string) bool {
	re := compiledGlob(pattern)
	if re == nil {
		return pattern == context
	}
	return re.MatchString(context)
}

// globs holds each pattern compiled (a *regexp.Regexp, or nil when
// malformed): the protection names few, and they are matched on every
// check of every PR, and on every commit status sync (compiling one each
// time took an eighth of the simulation's CPU).
var globs sync.Map

func compiledGlob(pattern string) *regexp.Regexp {
	if re, ok := globs.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(globRegexp(pattern))
	if err != nil {
		re = nil
	}
	globs.Store(pattern, re)
	return re
}

// globRegexp translates a glob (*, ?, [...], [!...], {a,b}) to an anchored
// regular expression.
func globRegexp(glob string) string {
	var b strings.Builder
	b.WriteString("^")
	inClass, inAlt := false, 0
	for _, r := range glob {
		switch {
		case inClass:
			if r == ']' {
				inClass = false
			}
			b.WriteRune(r)
		case r == '*':
			b.WriteString(".*")
		case r == '?':
			b.WriteString(".")
		case r == '[':
			inClass = true
			b.WriteRune(r)
		case r == '{':
			inAlt++
			b.WriteString("(?:")
		case r == '}' && inAlt > 0:
			inAlt--
			b.WriteString(")")
		case r == ',' && inAlt > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return strings.Replace(b.String(), "[!", "[^", -1)
}

// Failing returns the checks that count as failed.
func Failing(checks []Check) []Check {
	var out []Check
	for _, c := range checks {
		if c.Failed() {
			out = append(out, c)
		}
	}
	return out
}
