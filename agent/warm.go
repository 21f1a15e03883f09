package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Warming a directory. What a session's first prompt in a new directory
// starts, on opencode-ai 1.18.33 (its log at INFO, a scripted model, a
// 2-core machine at load 1-2.5): 2.7 s from the prompt to the model's
// first request, 0.17 s in a directory that had a session before. Each
// part is started by a request that runs no model and no command, checked
// one by one against the server's log:
//
//   - the instance (config, plugins, "creating instance", "bootstrapping")
//     and its location services (the tools bound to the directory, the
//     project copy: "booting location services", "project copy refresh"):
//     GET /find/file with the directory (GET /agent starts the instance
//     alone: docs/benchmarks.md measured a first prompt after it at 3.3 s);
//   - the providers and models of the instance, about 1 s at the first
//     loop step: GET /config/providers;
//   - the shell tool and the commands ("shell tool using shell", "init"):
//     GET /experimental/tool/ids and GET /command;
//   - the snapshot repository of the directory, kept in the server's data
//     directory ("initialized", then "tracking": git init, eight git
//     config calls, then every file added), made at the first step: a
//     session of the pool's own, never prompted (a user message with
//     noReply), reverted to that message (the revert tracks the
//     directory), then deleted.
//
// After them the first prompt reached the model 0.1-0.25 s after it was sent,
// and the server logged none of those lines for the directory.

// warmTitle names the session Warm makes and deletes; it is no PR's.
const warmTitle = "pool: starting this directory's instance"

// warmReads start the instance, its location services, providers, tools
// and commands for a directory.
var warmReads = []string{"/find/file?query=.&limit=1", "/config/providers", "/experimental/tool/ids", "/command"}

// Warm starts what a session's first prompt in dir would start on the
// server, so that the first session there starts as fast as the next
// ones. It runs no model and no command; it reads dir's files and adds
// them to the server's snapshot of dir. Each request may take as long as
// creating a session (createTimeout): it is the same start.
func (c *Client) Warm(ctx context.Context, dir string) error {
	if dir == "" {
		return nil // the server's own directory is warm
	}
	op := "warm " + dir
	for _, path := range warmReads {
		if err := c.doOn(ctx, c.create, op, http.MethodGet, inDir(path, dir), nil, nil); err != nil {
			return err
		}
	}
	return c.warmSnapshot(ctx, op, dir)
}

// warmSnapshot has the server make its snapshot of dir: a session that
// is never prompted, reverted to its one message, then deleted.
func (c *Client) warmSnapshot(ctx context.Context, op, dir string) (err error) {
	s, err := c.CreateSession(ctx, warmTitle, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Delete(context.WithoutCancel(ctx), s.ID)) }()
	path, err := sessionPath(op, s.ID, "/message")
	if err != nil {
		return err
	}
	var msg *messageJSON
	body := noReplyJSON{NoReply: true, Parts: []textPartJSON{{Type: "text", Text: "(no reply: this message only starts the directory)"}}}
	if err := c.doOn(ctx, c.create, op, http.MethodPost, path, body, &msg); err != nil {
		return err
	}
	if msg == nil || msg.Info.ID == "" {
		return malformed(op, fmt.Errorf("message of session %s has no id", s.ID))
	}
	path, err = sessionPath(op, s.ID, "/revert")
	if err != nil {
		return err
	}
	return c.doOn(ctx, c.create, op, http.MethodPost, path, map[string]string{"messageID": msg.Info.ID}, nil)
}
