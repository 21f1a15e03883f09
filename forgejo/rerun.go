package forgejo

import (
	"context"
	"fmt"
	"net/http"

	"pool/forge"
)

// RerunFailedJobs asks the forge to run the failed and cancelled jobs of
// Actions run `run` again, with the jobs that need them: POST
// /repos/{owner}/{repo}/actions/runs/{run}/rerun-failed-jobs (Gitea 1.26,
// routers/api/v1/repo/action.go: RerunFailedWorkflowRun; the token's
// account needs write access to the repository's Actions). Gitea answers
// 201 with no body once the jobs wait to run again, and has already
// reported them pending on the commit (services/actions/rerun.go), so
// the commit's statuses read next are the rerun's; to a run with no failed
// job, done or not, it answers 201 too and runs nothing (seen on the test
// forge). Forgejo has no such
// endpoint (through v15): a 404 or 405, classified RerunNoEndpoint. An
// answer the forge could not give (401, 5xx, no answer) is an error; any
// other is classified (forge.ClassifyRerun) for the caller.
func (c *Client) RerunFailedJobs(ctx context.Context, owner, repo string, run int64) (forge.RerunResult, error) {
	op := fmt.Sprintf("rerun the failed jobs of Actions run %d of %s/%s", run, owner, repo)
	status, b, err := c.do(ctx, op, http.MethodPost, fmt.Sprintf("%s/actions/runs/%d/rerun-failed-jobs", repoPath(owner, repo), run), nil)
	if err != nil {
		return forge.RerunResult{}, err
	}
	msg := snippet(b)
	res := forge.RerunResult{Outcome: forge.ClassifyRerun(status, msg), Status: status, Message: msg}
	if status == http.StatusUnauthorized || status >= 500 {
		return res, newError(op, status, fmt.Errorf("%s", msg))
	}
	return res, nil
}
