package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"pool/forge"
)

// timelineEventComment is the timeline entry type of a plain comment.
const timelineEventComment = "comment"

// apiTimelineComment is a timeline entry: a comment when its type says so.
type apiTimelineComment struct {
	Type string `json:"type"`
	apiComment
}

func (e *apiTimelineComment) check() error {
	switch {
	case e.Type == "":
		return errors.New("timeline event without a type")
	case e.Type == timelineEventComment:
		return e.apiComment.check()
	}
	return nil
}

// timelineComments reads a PR's comments from its timeline, which the forge
// pages (the comment list it does not), so that no answer must hold all of
// them. It keeps the newest comments whose bodies fit in the body cap
// together; an entry over the cap alone is skipped. What it drops is older
// than what it keeps, and logged.
func (c *Client) timelineComments(ctx context.Context, owner, repo string, n int) ([]forge.Comment, error) {
	skipped := 0
	l := listing{op: fmt.Sprintf("list comments of %s/%s#%d from the timeline", owner, repo, n),
		path: fmt.Sprintf("%s/issues/%d/timeline", repoPath(owner, repo), n), filtered: true, pageCount: true, skipHuge: true, skipped: &skipped}
	var kept []forge.Comment
	var size int64
	dropped := 0
	err := c.eachPage(ctx, l, func(_ int, body []byte, _ http.Header) (int, error) {
		batch, count, err := strictEntries(body, (*apiTimelineComment).check)
		for _, e := range batch {
			if e.Type != timelineEventComment {
				continue
			}
			kept = append(kept, e.comment())
			size += int64(len(e.Body))
			for size > c.maxBody && len(kept) > 0 {
				size -= int64(len(kept[0].Body))
				kept, dropped = kept[1:], dropped+1
			}
		}
		return count, err
	})
	if err != nil {
		return nil, err
	}
	c.log.Warn("a PR's comments are over the answer cap; read them from the timeline and kept the newest",
		"pr", fmt.Sprintf("%s/%s#%d", owner, repo, n), "kept", len(kept), "dropped_oldest", dropped, "skipped_too_large", skipped)
	return kept, nil
}
