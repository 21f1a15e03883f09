package pool

import (
	"context"
	"time"

	"pool/clone"
	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/report"
	"pool/sessionmark"
	"pool/sessions"
	"pool/texts"
)

// Forge is what the pool asks of the forge.
type Forge interface {
	Me(ctx context.Context) (string, error)
	Repository(ctx context.Context, owner, repo string) (forge.Repository, error)
	OpenPRs(ctx context.Context, owner, repo string) ([]forge.PR, error)
	ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error)
	PR(ctx context.Context, owner, repo string, n int) (forge.PR, error)
	Comments(ctx context.Context, owner, repo string, n int) ([]forge.Comment, error)
	PostComment(ctx context.Context, owner, repo string, n int, body string) (forge.Comment, error)
	EditComment(ctx context.Context, owner, repo string, id int64, body string) (forge.Comment, error)
	DeleteComment(ctx context.Context, owner, repo string, id int64) error
	Reviews(ctx context.Context, owner, repo string, n int) ([]forge.Review, error)
	StatusHistory(ctx context.Context, owner, repo, sha string) ([]forge.Status, error)
	OpenDependencies(ctx context.Context, owner, repo string, n int) ([]string, error)
	Protection(ctx context.Context, owner, repo, branch string) (forge.Protection, error)
	Permission(ctx context.Context, owner, repo, account string) (string, error)
	IsCollaborator(ctx context.Context, owner, repo, account string) (bool, error)
	Merge(ctx context.Context, owner, repo string, n int, opt forgejo.MergeOptions) (forge.MergeResult, error)
	MarkMerged(ctx context.Context, owner, repo string, n int, commit string) (forge.MergeResult, error)
	CancelAutoMerge(ctx context.Context, owner, repo string, n int) error
	Update(ctx context.Context, owner, repo string, n int, style string) (forgejo.UpdateResult, error)
	CommitParents(ctx context.Context, owner, repo, sha string) ([]string, error)
	DiffHash(ctx context.Context, owner, repo string, n int) (string, error)
}

// Reruns asks the forge to run the failed jobs of one of its Actions runs
// again: a merge train's car that failed where a car behind it passed (a
// flake, maybe) is run again once before its PR is ejected (train.go).
// forgejo.Client implements it, for Gitea 1.26; Forgejo answers that it
// has no such endpoint.
type Reruns interface {
	RerunFailedJobs(ctx context.Context, owner, repo string, run int64) (forge.RerunResult, error)
}

// Agent is what the pool asks of the agent server: what its sessions need
// (sessions.Agent), and at start its agents and whether it asks for a
// password. dir is the directory a session works in; the server answers
// statuses, permission asks and its agents per directory.
type Agent interface {
	sessions.Agent
	Agents(ctx context.Context, dir string) ([]string, error)
	OpenToAnyone(ctx context.Context) (bool, error)
}

// placement is an agent of several servers (package fleet): a session
// goes to an up server of the role its kind needs with a free slot, kept
// for it from before its PR is claimed until it starts, and an adopted
// session counts in its server's slots.
type placement interface {
	Reserve(fixer bool, title string) bool
	Unreserve(title string)
	Hold(id string)
}

// reserve keeps a server slot of c's role for c's session; false when none
// is free. Always true with one agent server, which the slots count alone.
func (p *Pool) reserve(c candidate) bool {
	f, ok := p.agent.(placement)
	return !ok || f.Reserve(c.kind == lifecycle.Fix, texts.SessionTitle(p.cfg.Repo(), c.pr.Number))
}

// unreserve gives up what reserve kept for PR n, unless its session took
// it.
func (p *Pool) unreserve(n int) {
	if f, ok := p.agent.(placement); ok {
		f.Unreserve(texts.SessionTitle(p.cfg.Repo(), n))
	}
}

// Digester reads a PR's actionable items, as `pool tick` does.
type Digester interface {
	Digest(ctx context.Context, n int) (report.Digest, error)
}

// Trees gives each session a work tree of the pool's clone, and keeps a
// tree whose session is gone for the next one, reset (its agent server
// instance stays warm). The clone implements it.
type Trees interface {
	// TakeTree returns a tree detached at head that no session uses.
	TakeTree(ctx context.Context, pr int, head string) (dir string, err error)
	// RecordSession records, where the session's user may read but not
	// write, what the session working in dir may act on.
	RecordSession(dir string, r sessionmark.Record) error
	// SessionRecord reads what RecordSession recorded for dir
	// (sessionmark.ErrNoRecord: nothing).
	SessionRecord(dir string) (sessionmark.Record, error)
	sessions.Trees // taking back, retiring and removing the trees of ended sessions
}

// Fixes publishes the commits a fixer session made in its work tree: the
// pool, not the agent, pushes them (clone.PushFix). The clone implements it.
type Fixes interface {
	PushFix(ctx context.Context, dir string, f clone.Fix) (head string, err error)
	// MarkReviewer says whether the session in work tree dir reviews (its
	// commands run as they are) or fixes (they run in the sandbox).
	MarkReviewer(dir string, reviewer bool) error
}

// History tells whether a PR's head is already on the base branch, and in
// which of its commits, and whether a commit's tree is the merge of two
// others (clone.ErrNoMergeTree: its git cannot tell). The clone implements
// it.
type History interface {
	OnBase(ctx context.Context, pr int, head string) (commit string, ok bool, err error)
	MergeTreeIs(ctx context.Context, pr int, commit, ours, theirs string) (bool, error)
}

// State is where the pool keeps its memory: the instance identity and one
// lifecycle Track per PR. Package store has it on the disk (store.Store)
// and in memory only (store.Memory: a dry run, a test).
type State interface {
	InstanceID(configured string, generate func() string) (string, error)
	Tracks() (map[int]lifecycle.Track, error)
	Save(n int, t lifecycle.Track) error
	Delete(n int) error
}
