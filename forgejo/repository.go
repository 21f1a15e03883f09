package forgejo

import (
	"context"
	"errors"
	"fmt"

	"pool/forge"
)

// Repository reads the repository's default branch and merge settings.
// A field the forge does not send (an older forge) is forge.Unsaid, never
// a no: the SDK's struct has no allow_fast_forward_only_merge, so it is
// read here.
func (c *Client) Repository(ctx context.Context, owner, repo string) (forge.Repository, error) {
	op := fmt.Sprintf("get repo %s/%s", owner, repo)
	var r struct {
		DefaultBranch   string `json:"default_branch"`
		FastForwardOnly *bool  `json:"allow_fast_forward_only_merge"`
	}
	if err := c.getJSON(ctx, op, repoPath(owner, repo), &r); err != nil {
		return forge.Repository{}, err
	}
	if r.DefaultBranch == "" {
		return forge.Repository{}, Malformed(op, errors.New("no default branch"))
	}
	return forge.Repository{DefaultBranch: r.DefaultBranch, FastForwardOnly: setting(r.FastForwardOnly)}, nil
}

// setting is a boolean field the forge may not send.
func setting(b *bool) forge.Setting {
	switch {
	case b == nil:
		return forge.Unsaid
	case *b:
		return forge.Yes
	}
	return forge.No
}
