package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"pool/configs"
)

// Options shape a sandbox.
type Options struct {
	Dir       string // where the servers keep their data; made if missing
	PRs       int    // open PRs to seed
	AgentName string // the agent the pool prompts; default configs.Default().AgentName
	Script    Script // the scripted model; default: approve
	Log       io.Writer
}

// Sandbox is a running test forge with a seeded repository, and an agent
// server running the shipped reviewer agents (deploy/opencode) and their
// pool-review tool, whose model is scripted.
type Sandbox struct {
	Forge *Forge
	Model *Model
	Agent *AgentServer

	Owner, Repo   string
	OwnerToken    string // the PR author
	PoolUser      string
	PoolToken     string // the pool's account: an admin collaborator
	ReviewerUser  string
	ReviewerToken string        // the scripted reviewer's account, a write collaborator; scopes ReviewerScopes
	Reviewer      ReviewerSetup // the reviewer tool and token file the agent server uses
	PRs           []int
	Dir           string
}

// Start brings up the forge, seeds a repository with opts.PRs open PRs, and
// starts the scripted model and the agent server. On error it stops what it
// started.
func Start(ctx context.Context, opts Options) (sb *Sandbox, err error) {
	if opts.AgentName == "" {
		opts.AgentName = configs.Default().AgentName
	}
	if opts.Script == nil {
		opts.Script = Reviewer(Approve)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	sb = &Sandbox{Dir: opts.Dir, Owner: "owner", Repo: "demo", PoolUser: "pool-bot", ReviewerUser: "reviewer"}
	defer func() {
		if err != nil {
			sb.Stop()
		}
	}()
	if sb.Forge, err = StartForge(ctx, filepath.Join(opts.Dir, "forge"), opts.Log); err != nil {
		return sb, err
	}
	if err = sb.seedAccounts(ctx); err != nil {
		return sb, err
	}
	for i := 1; i <= opts.PRs; i++ {
		if _, err = sb.AddPR(ctx, i); err != nil {
			return sb, err
		}
	}
	if sb.Model, err = StartModel(opts.Script); err != nil {
		return sb, err
	}
	// The reviewer as shipped: its definitions, permissions and tool, with
	// the scripted model in place of a real one.
	if sb.Reviewer, err = SetUpReviewer(ctx, filepath.Join(opts.Dir, "reviewer"), sb.Forge.URL, sb.ReviewerToken); err != nil {
		return sb, err
	}
	sb.Agent, err = StartAgentServer(ctx, filepath.Join(opts.Dir, "agent"), AgentOptions{
		ModelURL: sb.Model.URL, AgentName: opts.AgentName, Shipped: true, Env: sb.Reviewer.Env,
	})
	return sb, err
}

func (sb *Sandbox) seedAccounts(ctx context.Context) error {
	var err error
	if sb.OwnerToken, err = sb.Forge.CreateUser(ctx, sb.Owner); err != nil {
		return err
	}
	if sb.PoolToken, err = sb.Forge.CreateUser(ctx, sb.PoolUser); err != nil {
		return err
	}
	if _, err = sb.Forge.CreateUser(ctx, sb.ReviewerUser); err != nil {
		return err
	}
	// The reviewer's token has the scopes an operator gives it, no more.
	if sb.ReviewerToken, err = sb.Forge.ScopedToken(ctx, sb.ReviewerUser, ReviewerScopes); err != nil {
		return err
	}
	return sb.AddRepo(ctx, sb.Repo)
}

// AddRepo creates another repository of the owner's, with an initial
// commit on main, on which the pool's account is admin and the reviewer
// writes, as on the sandbox's first one.
func (sb *Sandbox) AddRepo(ctx context.Context, name string) error {
	if err := sb.Forge.CreateRepo(ctx, sb.OwnerToken, name); err != nil {
		return err
	}
	// Manual merges allowed: the pool marks merged a PR whose head a merge
	// cut off mid-call (a pool killed) pushed to the base.
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, http.MethodPatch, fmt.Sprintf("/repos/%s/%s", sb.Owner, name),
		map[string]any{"allow_manual_merge": true}, nil); err != nil {
		return fmt.Errorf("sandbox: allow manual merges in %s: %w", name, err)
	}
	// The pool's account administers the repository so that it may install
	// its webhook; the reviewer writes.
	if err := sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, name, sb.PoolUser, "admin"); err != nil {
		return err
	}
	return sb.Forge.AddCollaborator(ctx, sb.OwnerToken, sb.Owner, name, sb.ReviewerUser, "write")
}

// CIContext is the status context the sandbox's stand-in CI reports.
const CIContext = "sandbox/ci"

// AddPR opens PR number i's change: a branch adding one file, and its PR,
// whose head the sandbox's stand-in CI reports green.
func (sb *Sandbox) AddPR(ctx context.Context, i int) (int, error) {
	n, head, err := sb.AddPRWithoutCI(ctx, i)
	if err != nil {
		return 0, err
	}
	return n, sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, CIContext, "success", "", "passed")
}

// AddPRWithoutCI opens PR number i's change, with no status reported on
// its head, and returns its number and head.
func (sb *Sandbox) AddPRWithoutCI(ctx context.Context, i int) (int, string, error) {
	n, head, err := sb.openPR(ctx, sb.Repo, i)
	if err != nil {
		return 0, "", err
	}
	sb.PRs = append(sb.PRs, n)
	return n, head, nil
}

// AddPRTo opens PR number i's change in the owner's repository repo (made
// by AddRepo), with its head reported green, and returns its number. PRs
// lists only the first repository's.
func (sb *Sandbox) AddPRTo(ctx context.Context, repo string, i int) (int, error) {
	n, head, err := sb.openPR(ctx, repo, i)
	if err != nil {
		return 0, err
	}
	return n, sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, repo, head, CIContext, "success", "", "passed")
}

func (sb *Sandbox) openPR(ctx context.Context, repo string, i int) (int, string, error) {
	return sb.openPRIn(ctx, sb.Owner, repo, i)
}

func (sb *Sandbox) openPRIn(ctx context.Context, owner, repo string, i int) (int, string, error) {
	branch := fmt.Sprintf("feature-%d", i)
	path := fmt.Sprintf("features/feature-%d.txt", i)
	if err := sb.Forge.CreateBranchWithFile(ctx, sb.OwnerToken, owner, repo, branch, path, fmt.Sprintf("feature %d\n", i)); err != nil {
		return 0, "", err
	}
	return sb.Forge.CreatePR(ctx, sb.OwnerToken, owner, repo, branch, "main",
		fmt.Sprintf("Add feature %d", i), fmt.Sprintf("Adds feature %d.", i))
}

// AddOrg creates the organisation org, owned by the sandbox's owner, with
// the pool's account in its Owners team: it administers every repository
// of the organisation and may install the organisation's webhook.
func (sb *Sandbox) AddOrg(ctx context.Context, org string) error {
	if err := sb.Forge.CreateOrg(ctx, sb.OwnerToken, org); err != nil {
		return err
	}
	return sb.Forge.AddOwner(ctx, sb.OwnerToken, org, sb.PoolUser)
}

// AddOrgRepo creates a repository of the organisation org (made by
// AddOrg), with an initial commit on main, on which the reviewer writes.
func (sb *Sandbox) AddOrgRepo(ctx context.Context, org, name string) error {
	return sb.addOrgRepo(ctx, org, name, true)
}

// AddEmptyOrgRepo is AddOrgRepo with no commit and no branch yet: see
// InitRepo.
func (sb *Sandbox) AddEmptyOrgRepo(ctx context.Context, org, name string) error {
	return sb.addOrgRepo(ctx, org, name, false)
}

func (sb *Sandbox) addOrgRepo(ctx context.Context, org, name string, initial bool) error {
	if err := sb.Forge.CreateOrgRepo(ctx, sb.OwnerToken, org, name, initial); err != nil {
		return err
	}
	return sb.Forge.AddCollaborator(ctx, sb.OwnerToken, org, name, sb.ReviewerUser, "write")
}

// InitRepo makes the first commit, and so the main branch, of an empty
// repository.
func (sb *Sandbox) InitRepo(ctx context.Context, owner, name string) error {
	_, err := sb.Forge.PushFile(ctx, sb.OwnerToken, owner, name, "main", "README.md", "# "+name+"\n", "Initial commit")
	return err
}

// AddOrgPR opens PR number i's change in org/repo, with its head reported
// green, and returns its number.
func (sb *Sandbox) AddOrgPR(ctx context.Context, org, repo string, i int) (int, error) {
	n, head, err := sb.openPRIn(ctx, org, repo, i)
	if err != nil {
		return 0, err
	}
	return n, sb.Forge.PostStatus(ctx, sb.OwnerToken, org, repo, head, CIContext, "success", "", "passed")
}

// WriteTokenFile writes the pool's token to a 0600 file and returns its path.
func (sb *Sandbox) WriteTokenFile() (string, error) {
	path := filepath.Join(sb.Dir, "pool-token")
	return path, os.WriteFile(path, []byte(sb.PoolToken+"\n"), 0o600)
}

// Stop stops every server the sandbox started. Safe to call more than once.
func (sb *Sandbox) Stop() error {
	var errs []error
	if sb.Agent != nil {
		errs = append(errs, sb.Agent.Stop())
	}
	if sb.Model != nil {
		sb.Model.Close()
	}
	if sb.Forge != nil {
		errs = append(errs, sb.Forge.Stop())
	}
	return errors.Join(errs...)
}
