package forge

import (
	"net/url"
	"strconv"
	"strings"
)

// ActionsRun finds the Actions run behind a commit status of repository
// owner/repo: the forge's own CI points each status it reports at its
// job, "{sub-path}/{owner}/{repo}/actions/runs/{run}/jobs/{job}" (Gitea
// 1.26, services/actions/commit_status.go; a path with no host, the
// repository's link), which is how Gitea itself finds the runs of a
// commit's statuses (models/git: ParseGiteaActionsTargetURL). Gitea
// numbers the run in that path with its id, which its rerun endpoints
// take. A status of an external CI points elsewhere, or nowhere: no run
// (false), nothing the forge can run again.
func ActionsRun(targetURL, owner, repo string) (run int64, ok bool) {
	u, err := url.Parse(targetURL)
	if err != nil || targetURL == "" {
		return 0, false
	}
	parts := strings.Split(u.Path, "/")
	for i := 0; i+7 <= len(parts); i++ {
		p := parts[i : i+7]
		if !strings.EqualFold(p[0], owner) || !strings.EqualFold(p[1], repo) || p[2] != "actions" || p[3] != "runs" || p[5] != "jobs" {
			continue
		}
		run, err1 := strconv.ParseInt(p[4], 10, 64)
		_, err2 := strconv.ParseInt(p[6], 10, 64)
		if err1 == nil && err2 == nil && run > 0 {
			return run, true
		}
	}
	return 0, false
}

// RerunOutcome is the forge's answer to a rerun of a run's failed jobs,
// classified.
type RerunOutcome string

const (
	RerunStarted    RerunOutcome = "started"     // 201: the failed jobs (and those that need them) wait to run again; a run with none: nothing runs, 201 all the same
	RerunNotDone    RerunOutcome = "not_done"    // 400 "this workflow run is not done": a job of the run still runs
	RerunNoEndpoint RerunOutcome = "no_endpoint" // 404 for the route, 405: the forge has no rerun endpoint (Forgejo, Gitea before 1.26)
	RerunRefused    RerunOutcome = "refused"     // 403 (no write access to Actions), another 400 (a disabled workflow), 404 naming the run (deleted), anything else
)

// RerunResult is the classified answer and what the forge said.
type RerunResult struct {
	Outcome RerunOutcome
	Status  int
	Message string
}

// ClassifyRerun classifies the answer to POST
// /repos/{owner}/{repo}/actions/runs/{run}/rerun-failed-jobs (Gitea 1.26,
// routers/api/v1/repo/action.go: RerunFailedWorkflowRun). A run Gitea
// does not find answers 404 with the error "run with id N: resource does
// not exist"; a route the forge does not have answers 404 without it (or
// 405), and is the forge's lack of the endpoint.
func ClassifyRerun(status int, message string) RerunOutcome {
	m := strings.ToLower(message)
	switch {
	case status == statusCreated || status == statusOK || status == 204:
		return RerunStarted
	case status == 400 && strings.Contains(m, "not done"):
		return RerunNotDone
	case status == statusNotFound && (strings.Contains(m, "run with id") || strings.Contains(m, "does not exist")):
		return RerunRefused
	case status == statusNotFound || status == statusNotAllowed:
		return RerunNoEndpoint
	}
	return RerunRefused
}
