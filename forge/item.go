package forge

import "time"

// Item reasons: why an item needs someone to act.
const (
	ReasonFailingCheck      = "failing-check"
	ReasonChangesRequested  = "changes-requested"
	ReasonNewComment        = "new-comment"
	ReasonNewReview         = "new-review"
	ReasonUnresolvedThread  = "unresolved-thread"
	ReasonMergeConflict     = "merge-conflict"
	ReasonBlocked           = "blocked"
	ReasonStaleBase         = "stale-base"
	ReasonClosedUnmerged    = "closed-unmerged"
	ReasonAutoMergeNotArmed = "auto-merge-not-armed"
)

// Item sources: where an item lives, and so where a reply to it goes.
const (
	SourceCheck   = "check"          // a commit status; id is the status id
	SourceComment = "comment"        // a PR conversation comment
	SourceReview  = "review"         // a review's body
	SourceInline  = "review-comment" // an inline comment in a review thread
	SourcePR      = "pr"             // the PR itself; id is its number
)

// Item is one thing on the PR that needs an answer or a fix: report's
// digest lists them, texts puts them into a prompt's data block.
type Item struct {
	Reason    string    `json:"reason"`
	Source    string    `json:"source"`
	ID        int64     `json:"id"`
	UpdatedAt time.Time `json:"updated_at"`
	Author    string    `json:"author,omitempty"`
	Body      string    `json:"body"`
	File      string    `json:"file,omitempty"`
	Line      int       `json:"line,omitempty"`
	URL       string    `json:"url,omitempty"`
	Answers   string    `json:"answers"`
	// Unofficial marks an item written by an account whose reviews do not
	// count (lifecycle.ReviewRule): shown, but it blocks and merges nothing.
	Unofficial bool `json:"unofficial,omitempty"`
}
