package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"pool/lifecycle"
	"pool/texts"
)

// Render writes the report block, exactly the shape planners parse.
func (r Report) Render() string {
	var b strings.Builder
	b.WriteString("=== pool report ===\n")
	fmt.Fprintf(&b, "pr=%d  branch=%s\n", r.Number, orUnknown(r.Branch))
	fmt.Fprintf(&b, "head_sha: %s\n", orUnknown(r.HeadSHA))
	fmt.Fprintf(&b, "state: %s\n", orUnknown(r.State))
	fmt.Fprintf(&b, "mergeable: %s\n", boolWord(r.Mergeable))
	r.renderCI(&b)
	r.renderReviewers(&b)
	fmt.Fprintf(&b, "unresolved_review_threads: %s\n", r.Threads)
	fmt.Fprintf(&b, "comments_from_bots: %s\n", r.BotComments)
	fmt.Fprintf(&b, "recommendation: %s\n", r.Recommendation)
	b.WriteString("=== end ===\n")
	return b.String()
}

// renderCI writes ci_failed (a list, unknown, or nothing when none failed),
// ci_passed and ci_pending.
func (r Report) renderCI(b *strings.Builder) {
	if !r.CIKnown {
		b.WriteString("ci_failed: unknown\nci_passed: unknown\nci_pending: unknown\n")
		return
	}
	if len(r.Failed) > 0 {
		b.WriteString("ci_failed:\n")
		for _, c := range r.Failed {
			fmt.Fprintf(b, "  - context=%s  state=%s  url=%s  description=%s\n",
				texts.OneLine(c.Context), c.State, orNone(c.URL), orNone(c.Description))
		}
	}
	fmt.Fprintf(b, "ci_passed: %d\n", r.Passed)
	pending := "none"
	if len(r.Pending) > 0 {
		pending = texts.OneLine(strings.Join(r.Pending, ","))
	}
	fmt.Fprintf(b, "ci_pending: %s\n", pending)
}

func (r Report) renderReviewers(b *strings.Builder) {
	if len(r.Reviewers) == 0 {
		b.WriteString("reviewers: none\n")
		return
	}
	b.WriteString("reviewers:\n")
	for _, rv := range r.Reviewers {
		note := ""
		if (rv.Status == reviewerApproved || rv.Status == reviewerChanges) && !rv.Counted {
			note = "  (does not count: not official)"
		}
		fmt.Fprintf(b, "  %s: %s  reviews=%s%s\n", rv.Account, rv.Status, rv.Reviews, note)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return texts.OneLine(s)
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return texts.OneLine(s)
}

func boolWord(b *bool) string {
	if b == nil {
		return unknown
	}
	return strconv.FormatBool(*b)
}

// jsonCheck is a check as the report's JSON shows it.
type jsonCheck struct {
	Context     string `json:"context"`
	State       string `json:"state"`
	URL         string `json:"url"`
	Description string `json:"description"`
}

// jsonReport has the fields of the block. A value that is unknown is the
// string "unknown"; ci_failed is absent only when statuses were read and
// none failed.
type jsonReport struct {
	PR             int         `json:"pr"`
	Branch         string      `json:"branch"`
	HeadSHA        string      `json:"head_sha"`
	State          string      `json:"state"`
	Mergeable      any         `json:"mergeable"`
	CIFailed       any         `json:"ci_failed,omitempty"`
	CIPassed       Count       `json:"ci_passed"`
	CIPending      any         `json:"ci_pending"`
	Superseded     []jsonCheck `json:"superseded,omitempty"`
	Reviewers      []Reviewer  `json:"reviewers"`
	Threads        Count       `json:"unresolved_review_threads"`
	BotComments    Count       `json:"comments_from_bots"`
	TimedOut       bool        `json:"timed_out,omitempty"`
	Recommendation string      `json:"recommendation"`
	Errors         []string    `json:"errors,omitempty"`
}

// JSON renders the report's fields as one JSON object.
func (r Report) JSON() ([]byte, error) {
	j := jsonReport{PR: r.Number, Branch: orUnknown(r.Branch), HeadSHA: orUnknown(r.HeadSHA),
		State: orUnknown(r.State), Mergeable: unknown, CIFailed: unknown, CIPassed: Count{},
		CIPending: unknown, Superseded: jsonChecks(r.Superseded), Reviewers: r.Reviewers,
		Threads: r.Threads, BotComments: r.BotComments, TimedOut: r.TimedOut,
		Recommendation: r.Recommendation, Errors: r.Errors}
	if r.Mergeable != nil {
		j.Mergeable = *r.Mergeable
	}
	if r.CIKnown {
		j.CIFailed, j.CIPassed, j.CIPending = nil, Count{N: r.Passed, Known: true}, append([]string{}, r.Pending...)
		if len(r.Failed) > 0 {
			j.CIFailed = jsonChecks(r.Failed)
		}
	}
	if j.Reviewers == nil {
		j.Reviewers = []Reviewer{}
	}
	return json.MarshalIndent(j, "", "  ")
}

func jsonChecks(cs []lifecycle.Check) []jsonCheck {
	var out []jsonCheck
	for _, c := range cs {
		out = append(out, jsonCheck{Context: c.Context, State: c.State, URL: c.URL, Description: c.Description})
	}
	return out
}
