package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
)

// reasonRank orders items in a digest.
var reasonRank = map[string]int{
	forge.ReasonClosedUnmerged: 0, forge.ReasonMergeConflict: 1, forge.ReasonBlocked: 2, forge.ReasonFailingCheck: 3,
	forge.ReasonChangesRequested: 4, forge.ReasonNewReview: 5, forge.ReasonUnresolvedThread: 6, forge.ReasonNewComment: 7,
	forge.ReasonStaleBase: 8, forge.ReasonAutoMergeNotArmed: 9,
}

// Digest is one read-only observation of a PR and the items it shows.
type Digest struct {
	Repo           string            `json:"repo"`
	PR             int               `json:"pr"`
	Title          string            `json:"title"`
	URL            string            `json:"url"`
	State          string            `json:"state"`
	Draft          bool              `json:"draft"`
	HeadRef        string            `json:"head_ref"`
	HeadSHA        string            `json:"head_sha"`
	BaseRef        string            `json:"base_ref"`
	BaseSHA        string            `json:"base_sha"`
	MergeBase      string            `json:"merge_base"`
	Mergeable      bool              `json:"mergeable"`
	AutoMergeArmed *bool             `json:"auto_merge_armed,omitempty"`
	Checks         []lifecycle.Check `json:"checks"` // null when the statuses could not be read
	Items          []forge.Item      `json:"items"`
	// Fingerprint is a hash of the items: equal digests have equal ones.
	Fingerprint string   `json:"fingerprint"`
	Errors      []string `json:"errors,omitempty"` // reads that failed: the items may be incomplete
}

// TickOptions configures what a tick reports.
type TickOptions struct {
	// AutoMerge reports an approved, green PR into the default branch that
	// has no auto-merge scheduled.
	AutoMerge bool
	// Policy is the supervisor's (configs.Config.Policy), skip label
	// included: its Rule says whose reviews count.
	Policy lifecycle.Policy
	// OwnContext is the pool's own commit status context, which is no check.
	OwnContext string
}

// TickOptionsFor are a tick's options under the supervisor's policy p
// (configs.Config.Policy), with ownContext the pool's own commit status
// context.
func TickOptionsFor(p lifecycle.Policy, ownContext string, autoMerge bool) TickOptions {
	return TickOptions{AutoMerge: autoMerge, Policy: p, OwnContext: ownContext}
}

// Tick observes the PR once, read-only, and returns its digest. Only an
// unreadable PR is an error; other failed reads are listed in the digest.
func Tick(ctx context.Context, c Forge, owner, repo string, n int, opt TickOptions) (Digest, error) {
	return tick(ctx, c, forge.Target{Owner: owner, Repo: repo, Number: n}, opt)
}

func tick(ctx context.Context, f Forge, t forge.Target, opt TickOptions) (Digest, error) {
	s, err := observe(ctx, f, t, opt.AutoMerge, opt.OwnContext)
	if err != nil {
		return Digest{}, fmt.Errorf("report: tick %s: %w", t, err)
	}
	return NewDigest(s, opt), nil
}

// NewDigest turns a snapshot into a digest, judged by the policy as a
// read-only observer judges by it.
func NewDigest(s Snapshot, opt TickOptions) Digest {
	opt.Policy = readOnly(opt.Policy)
	pr := s.PR
	d := Digest{Repo: s.Owner + "/" + s.Repo, PR: s.Number, Title: pr.Title, URL: pr.URL,
		State: prState(pr), Draft: pr.Draft, HeadRef: pr.HeadRef, HeadSHA: pr.HeadSHA,
		BaseRef: pr.BaseRef, BaseSHA: pr.BaseSHA, MergeBase: pr.MergeBase, Mergeable: pr.Mergeable}
	if s.StatusesErr == nil {
		d.Checks = lifecycle.Checks(s.Statuses)
	}
	if opt.AutoMerge && s.AutoMergeErr == nil {
		armed := s.AutoMergeArmed
		d.AutoMergeArmed = &armed
	}
	for _, err := range s.Errors() {
		d.Errors = append(d.Errors, err.Error())
	}
	d.Items = items(s, d, opt)
	d.Fingerprint = fingerprint(d.Items)
	return d
}

// items lists what the PR needs, in a stable order. A merged PR needs
// nothing; a closed one needs its author.
func items(s Snapshot, d Digest, opt TickOptions) []forge.Item {
	var out []forge.Item
	switch d.State {
	case stateMerged:
		return []forge.Item{}
	case stateClosed:
		return []forge.Item{prItem(s, forge.ReasonClosedUnmerged, "", "The PR was closed without merging.")}
	}
	out = append(out, checkItems(d.Checks)...)
	// Answers to conversation items may be in either comments or review
	// bodies: without both, whether an item was answered is unknown.
	voices := s.voices(opt.Policy.Rule)
	if s.CommentsErr == nil && s.ReviewsErr == nil {
		answered := conversationAnswers(s, voices)
		out = append(out, reviewItems(s.Reviews, answered, voices)...)
		out = append(out, commentItems(s.Comments, answered, voices)...)
	}
	for _, th := range openThreads(s.Inline, voices) {
		out = append(out, th.items()...)
	}
	for i := range out {
		out[i].Unofficial = out[i].Author != "" && !voices[strings.ToLower(out[i].Author)]
	}
	out = append(out, prItems(s, opt)...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if reasonRank[a.Reason] != reasonRank[b.Reason] {
			return reasonRank[a.Reason] < reasonRank[b.Reason]
		}
		return a.ID < b.ID
	})
	if out == nil {
		out = []forge.Item{}
	}
	return out
}

func checkItems(checks []lifecycle.Check) []forge.Item {
	var out []forge.Item
	for _, c := range checks {
		if !c.Failed() {
			continue
		}
		body := fmt.Sprintf("%s: %s: %s", c.Context, c.State, orNone(c.Description))
		out = append(out, forge.Item{Reason: forge.ReasonFailingCheck, Source: forge.SourceCheck, ID: c.ID,
			UpdatedAt: c.Created, Body: body, URL: c.URL, Answers: token(forge.SourceCheck, c.ID, c.State)})
	}
	return out
}

// voices are the accounts whose reply markers answer items: the pool's own
// account and every account whose reviews count on this PR.
func (s Snapshot) voices(rule lifecycle.ReviewRule) map[string]bool {
	return rule.Voices(s.Self, s.PR.Author, reviewsOf(s.Reviews))
}

// conversationAnswers collects the tokens answered on the PR's conversation,
// in PR comments and review bodies written by the voices. A marker typed by
// anyone else answers nothing.
func conversationAnswers(s Snapshot, voices map[string]bool) map[string]bool {
	answered := map[string]bool{}
	for _, c := range s.Comments {
		if !voices[strings.ToLower(c.Author)] {
			continue
		}
		for _, tok := range AnswerTokens(c.Body) {
			answered[tok] = true
		}
	}
	for _, r := range s.Reviews {
		if !voices[strings.ToLower(r.Author)] {
			continue
		}
		for _, tok := range AnswerTokens(r.Body) {
			answered[tok] = true
		}
	}
	return answered
}

// reviewItems: every request for changes that no later approval by the same
// account replaced, and every commenting review with a body, unless answered.
func reviewItems(reviews []forgejo.ReviewDetail, answered, voices map[string]bool) []forge.Item {
	var out []forge.Item
	for _, r := range reviews {
		if !submitted(r.State) || r.Dismissed {
			continue
		}
		var reason string
		switch {
		case r.State == forge.ReviewRequestChanges && !approvedLater(r, reviews):
			reason = forge.ReasonChangesRequested
		case r.State == forge.ReviewComment && strings.TrimSpace(r.Body) != "" && !isPoolMark(r.Body, r.Author, voices):
			reason = forge.ReasonNewReview
		default:
			continue
		}
		updated := r.Updated
		if updated.IsZero() {
			updated = r.Submitted
		}
		tok := token(forge.SourceReview, r.ID, timeVersion(updated))
		if answered[tok] {
			continue
		}
		out = append(out, forge.Item{Reason: reason, Source: forge.SourceReview, ID: r.ID, UpdatedAt: updated,
			Author: r.Author, Body: r.Body, URL: r.URL, Answers: tok})
	}
	return out
}

func approvedLater(r forgejo.ReviewDetail, reviews []forgejo.ReviewDetail) bool {
	for _, o := range reviews {
		if o.ID > r.ID && strings.EqualFold(o.Author, r.Author) && o.State == forge.ReviewApproved && !o.Dismissed {
			return true
		}
	}
	return false
}

func commentItems(comments []forge.Comment, answered, voices map[string]bool) []forge.Item {
	var out []forge.Item
	for _, c := range comments {
		if isPoolMark(c.Body, c.Author, voices) {
			continue
		}
		tok := token(forge.SourceComment, c.ID, timeVersion(c.Updated))
		if answered[tok] {
			continue
		}
		out = append(out, forge.Item{Reason: forge.ReasonNewComment, Source: forge.SourceComment, ID: c.ID,
			UpdatedAt: c.Updated, Author: c.Author, Body: c.Body, Answers: tok})
	}
	return out
}

// prItems are the items about the PR as a whole.
func prItems(s Snapshot, opt TickOptions) []forge.Item {
	pr := s.PR
	var out []forge.Item
	switch {
	case pr.Draft:
		out = append(out, prItem(s, forge.ReasonBlocked, "",
			"The forge will not merge the PR: its title marks it as work in progress."))
	case !pr.Mergeable:
		out = append(out, prItem(s, forge.ReasonMergeConflict, "",
			"The forge reports the PR as not mergeable with its base: a merge conflict (or the forge is still checking)."))
	}
	if pr.Behind() { // as the supervisor reads it (lifecycle.Observation.Behind)
		out = append(out, prItem(s, forge.ReasonStaleBase, pr.BaseSHA, fmt.Sprintf(
			"The branch is behind its base: it forked from %s, and %s is now at %s.",
			forge.Short(pr.MergeBase), pr.BaseRef, forge.Short(pr.BaseSHA))))
	}
	if opt.AutoMerge && autoMergeDue(s, opt) {
		out = append(out, prItem(s, forge.ReasonAutoMergeNotArmed, "",
			"The PR is approved, green and mergeable into the default branch, but no auto-merge is scheduled."))
	}
	return out
}

// prItem is a PR-level item. Its token follows the head (and what else the
// reason depends on), not the PR's update time, which every comment moves.
func prItem(s Snapshot, reason, version, body string) forge.Item {
	id := int64(s.Number)
	return forge.Item{Reason: reason, Source: forge.SourcePR, ID: id, UpdatedAt: s.PR.Updated, Body: body,
		URL: s.PR.URL, Answers: token(forge.SourcePR, id, reason+"@"+s.PR.HeadSHA+"@"+version)}
}

// autoMergeDue: the supervisor would merge it now (lifecycle.MayMerge),
// the forge says it is mergeable, into the default branch, and no
// auto-merge is scheduled.
func autoMergeDue(s Snapshot, opt TickOptions) bool {
	if s.AutoMergeErr != nil || s.AutoMergeArmed || s.PR.BaseRef != s.DefaultBranch || !s.PR.Mergeable || s.PR.Draft {
		return false
	}
	ok, _, err := s.MayMerge(opt.Policy)
	return err == nil && ok
}

// headVerdict is where the counted reviews on the head stand.
func headVerdict(s Snapshot, rule lifecycle.ReviewRule) lifecycle.Verdict {
	return rule.HeadVerdict(s.PR.Author, s.PR.HeadSHA, reviewsOf(s.Reviews))
}

// fingerprint hashes what identifies the items: their reasons, sources, ids
// and tokens (a token changes with its item's text).
func fingerprint(items []forge.Item) string {
	lines := make([]string, 0, len(items))
	for _, it := range items {
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%d\x00%s", it.Reason, it.Source, it.ID, it.Answers))
	}
	sort.Strings(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(h[:8])
}
