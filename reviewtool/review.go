package reviewtool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"pool/forge"
	"pool/forgejo"
	"pool/internal/redact"
	"pool/sessionmark"
)

// verdicts maps the tool's verdict words to the forge's review events.
var verdicts = map[string]string{
	"approve":         forge.ReviewApproved,
	"request-changes": forge.ReviewRequestChanges,
	"comment":         forge.ReviewComment,
}

var lineCommentRE = regexp.MustCompile(`(?s)^([^:]+):([0-9]+):(.+)$`)

func runReview(ctx context.Context, t *tool, args []string, stdout, stderr io.Writer) int {
	fs := flags("review", stderr)
	commit := fs.String("commit", "", "the commit reviewed: the PR's head (required)")
	verdict := fs.String("verdict", "", "approve, request-changes or comment (required)")
	body := fs.String("body", "", "what the review says, and why (required)")
	lines := fs.StringArray("comment", nil, "a line comment, PATH:LINE:TEXT (repeatable)")
	target, ok := t.parse(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	event, ok := verdicts[*verdict]
	if !ok {
		return usageErr(stderr, "review", fmt.Errorf("--verdict must be approve, request-changes or comment, got %q", *verdict))
	}
	r := forgejo.NewReview{Event: event, CommitID: *commit}
	var err error
	if r.Body, err = t.body(*body); err != nil {
		return usageErr(stderr, "review", err)
	}
	if len(*lines) > maxComments {
		return usageErr(stderr, "review", fmt.Errorf("at most %d line comments in one review", maxComments))
	}
	for _, l := range *lines {
		lc, err := parseLineComment(l)
		if err == nil {
			err = t.checkText(lc.Body)
		}
		if err != nil {
			return usageErr(stderr, "review", err)
		}
		r.Comments = append(r.Comments, lc)
	}
	return t.postReview(ctx, target, r, stdout, stderr)
}

// parseLineComment reads PATH:LINE:TEXT.
func parseLineComment(s string) (forgejo.LineComment, error) {
	m := lineCommentRE.FindStringSubmatch(s)
	if m != nil {
		n, err := strconv.Atoi(m[2])
		if err == nil && n > 0 && strings.TrimSpace(m[3]) != "" {
			return forgejo.LineComment{Path: m[1], Line: n, Body: m[3]}, nil
		}
	}
	return forgejo.LineComment{}, fmt.Errorf("--comment wants PATH:LINE:TEXT with LINE from 1, got %q", redact.Clip(s, 80))
}

func runLine(ctx context.Context, t *tool, args []string, stdout, stderr io.Writer) int {
	fs := flags("line", stderr)
	commit := fs.String("commit", "", "the commit reviewed: the PR's head (required)")
	path := fs.String("path", "", "the file, as the PR's head has it (required)")
	line := fs.Int("line", 0, "the line in the head's version of the file, from 1 (required)")
	body := fs.String("body", "", "the comment (required)")
	target, ok := t.parse(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	if *path == "" || *line <= 0 {
		return usageErr(stderr, "line", errors.New("--path and --line (from 1) are required"))
	}
	text, err := t.body(*body)
	if err != nil {
		return usageErr(stderr, "line", err)
	}
	r := forgejo.NewReview{Event: forge.ReviewComment, CommitID: *commit,
		Comments: []forgejo.LineComment{{Path: *path, Line: *line, Body: text}}}
	return t.postReview(ctx, target, r, stdout, stderr)
}

// body checks a body the agent wrote and signs it. The tool reads bodies
// from arguments only: a shell redirect is invisible to the agent server's
// permission patterns, so reading standard input would let `< FILE` post
// any file the server's user can read.
func (t *tool) body(arg string) (string, error) {
	text := strings.TrimSpace(arg)
	if err := t.checkText(text); err != nil {
		return "", err
	}
	return sign(text), nil
}

// checkText refuses an empty text, an oversized one, one meant for
// standard input, and one that holds the token.
func (t *tool) checkText(text string) error {
	switch {
	case text == "":
		return errors.New("--body is required: say what you found and why")
	case text == "-":
		return errors.New("--body - (standard input) is not read: give the text itself")
	case len(text) > maxBody:
		return fmt.Errorf("the body is over %d bytes", maxBody)
	case strings.Contains(text, t.token):
		return errors.New("the text holds the reviewer's token: refused")
	case strings.Contains(text, sessionmark.TagPrefix):
		return errors.New("the text holds a session mark: only the tool writes one")
	}
	return nil
}

// sign ends text with the signature, once.
func sign(text string) string {
	text = strings.TrimRight(text, "\n")
	if strings.HasSuffix(text, strings.TrimSpace(Signature)) {
		return text
	}
	return text + Signature
}

// postReview files r on the session's PR (fileReview) and prints what
// was filed.
func (t *tool) postReview(ctx context.Context, target forge.Target, r forgejo.NewReview, stdout, stderr io.Writer) int {
	filed, err := t.fileReview(ctx, target, r, false)
	var refused *usageError
	switch {
	case errors.As(err, &refused):
		return usageErr(stderr, "review", refused.error)
	case err != nil:
		return fail(stderr, "review", err)
	}
	return writeJSON(stdout, filed)
}

// usageError is a request the tool refuses before it reaches the forge.
type usageError struct{ error }

// fileReview files r on the session's PR. The commit must be the session's
// head in full, which is both the work tree's HEAD and the PR's head on the
// forge now: a review elsewhere is stale at once, and a prefix would let the
// review land on a head pushed during the session, which no one read. The
// body ends with the session's mark. once refuses a second review of the
// session (one that carries its mark is on the PR already).
func (t *tool) fileReview(ctx context.Context, target forge.Target, r forgejo.NewReview, once bool) (map[string]any, error) {
	head := t.session.Head
	switch {
	case r.CommitID == "":
		return nil, &usageError{fmt.Errorf("the commit is required: the head commit you reviewed, in full (%s)", head)}
	case !sessionmark.HeadRE.MatchString(r.CommitID):
		return nil, &usageError{fmt.Errorf("commit %q is not a full commit id: name the head you reviewed in full (%s)",
			redact.Clip(r.CommitID, 64), head)}
	case r.CommitID != head:
		return nil, &usageError{fmt.Errorf("refused: commit %s is not the head this session was started for (%s)", r.CommitID, head)}
	}
	if tree, err := treeHead(t.dir); err != nil || tree != head {
		return nil, fmt.Errorf("the work tree's HEAD is %q, not the session's head %s (%v): review the head you were given", tree, head, err)
	}
	c, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := c.PR(ctx, target.Owner, target.Repo, target.Number)
	if err != nil {
		return nil, err
	}
	switch {
	case pr.State != "open" || pr.Merged:
		return nil, fmt.Errorf("%s is %s: nothing to review", target, prState(pr))
	case pr.HeadSHA != head:
		return nil, fmt.Errorf("%s's head on the forge is now %s, not %s: the review would not be of the head you read; nothing filed", target, pr.HeadSHA, head)
	}
	if once {
		if err := t.checkVerdictOpen(ctx, c, target); err != nil {
			return nil, err
		}
	}
	r.Body += sessionmark.Tag(t.session.Mark)
	for i := range r.Comments {
		r.Comments[i].Body = sign(strings.TrimSpace(r.Comments[i].Body))
	}
	got, err := c.PostReview(ctx, target.Owner, target.Repo, target.Number, r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"posted": "review", "id": got.ID, "state": got.State,
		"commit_id": got.CommitID, "author": got.Author, "official": got.Official, "line_comments": len(r.Comments),
		"session": t.session.Session}, nil
}

// maxSessionReviews bounds the reviews one session files.
const maxSessionReviews = 3

// checkVerdictOpen refuses a review once the session filed its verdict
// (an approval or a request for changes carrying its mark is on the PR),
// or maxSessionReviews reviews: a session decides once.
func (t *tool) checkVerdictOpen(ctx context.Context, c *forgejo.Client, target forge.Target) error {
	reviews, err := c.ReviewDetails(ctx, target.Owner, target.Repo, target.Number)
	if err != nil {
		return err
	}
	filed := 0
	for _, r := range reviews {
		if sessionmark.Find(r.Body) != t.session.Mark {
			continue
		}
		filed++
		if r.State == forge.ReviewApproved || r.State == forge.ReviewRequestChanges || filed >= maxSessionReviews {
			return &usageError{fmt.Errorf("this session filed its verdict already (review %d, %s): one verdict a session", r.ID, r.State)}
		}
	}
	return nil
}

// maxHeadFile bounds the read of .git/HEAD.
const maxHeadFile = 256

// treeHead is the commit checked out, detached, in the work tree dir, read
// from its .git/HEAD without running git in a tree the session may have
// changed.
func treeHead(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, ".git", "HEAD"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHeadFile))
	return strings.TrimSpace(string(b)), err
}

func runComment(ctx context.Context, t *tool, args []string, stdout, stderr io.Writer) int {
	fs := flags("comment", stderr)
	body := fs.String("body", "", "the comment (required)")
	target, ok := t.parse(fs, args, stderr)
	if !ok {
		return exitUsage
	}
	text, err := t.body(*body)
	if err != nil {
		return usageErr(stderr, "comment", err)
	}
	c, err := t.connect(ctx)
	if err != nil {
		return fail(stderr, "comment", err)
	}
	cm, err := c.PostComment(ctx, target.Owner, target.Repo, target.Number, text)
	if err != nil {
		return fail(stderr, "comment", err)
	}
	return writeJSON(stdout, map[string]any{"posted": "comment", "id": cm.ID, "author": cm.Author})
}
