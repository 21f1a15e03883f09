package pool

import (
	"context"
	"time"

	"pool/agent"
	"pool/forgejo"
	"pool/report"
)

// Forge is what the pool asks of the forge.
type Forge interface {
	Me(ctx context.Context) (string, error)
	DefaultBranch(ctx context.Context, owner, repo string) (string, error)
	OpenPRs(ctx context.Context, owner, repo string) ([]forgejo.PR, error)
	ChangedPRs(ctx context.Context, owner, repo string, since time.Time) ([]forgejo.PRChange, time.Time, error)
	PR(ctx context.Context, owner, repo string, n int) (forgejo.PR, error)
	Comments(ctx context.Context, owner, repo string, n int) ([]forgejo.Comment, error)
	PostComment(ctx context.Context, owner, repo string, n int, body string) (forgejo.Comment, error)
	DeleteComment(ctx context.Context, owner, repo string, id int64) error
	Reviews(ctx context.Context, owner, repo string, n int) ([]forgejo.Review, error)
	StatusHistory(ctx context.Context, owner, repo, sha string) ([]forgejo.Status, error)
	Protection(ctx context.Context, owner, repo, branch string) (forgejo.Protection, error)
	Merge(ctx context.Context, owner, repo string, n int, opt forgejo.MergeOptions) (forgejo.MergeResult, error)
	CancelAutoMerge(ctx context.Context, owner, repo string, n int) error
}

// Agent is what the pool asks of the agent server.
type Agent interface {
	CreateSession(ctx context.Context, title string) (agent.Session, error)
	PromptAsync(ctx context.Context, sessionID, agentName, text string) error
	Statuses(ctx context.Context) (map[string]agent.Status, error)
	Messages(ctx context.Context, sessionID string) ([]agent.Message, error)
	Sessions(ctx context.Context) ([]agent.Session, error)
	Delete(ctx context.Context, sessionID string) error
	Abort(ctx context.Context, sessionID string) error
	Permissions(ctx context.Context) ([]agent.Permission, error)
}

// Digester reads a PR's actionable items, as `pool tick` does.
type Digester interface {
	Digest(ctx context.Context, n int) (report.Digest, error)
}

// Refresher keeps a working copy current. The clone implements it.
type Refresher interface {
	Refresh(ctx context.Context) error
}
