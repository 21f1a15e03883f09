package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"pool/configs"
)

// Options shape a sandbox.
type Options struct {
	Dir       string // where the servers keep their data; made if missing
	PRs       int    // open PRs to seed
	AgentName string // the agent the pool prompts; default configs.Default().AgentName
	Script    Script // the scripted model; default: approve
	Log       io.Writer
	// SeparateAgent gives the sandbox an agent server of its own running as
	// SeparateUser, when this machine allows it (root); otherwise it logs
	// why not and uses the servers' agent server. Sandbox.AgentUser says
	// which happened.
	SeparateAgent bool
	// AllowEverything makes that agent server's reviewer a stand-in that
	// may use every tool on every path, as if hostile text had talked the
	// shipped one past its permissions: what is left to stop it is the OS.
	AllowEverything bool
}

// Sandbox is a seeded repository on a test forge, and an agent server
// running the shipped reviewer agents (deploy/opencode) and their
// pool-review tool, whose scripted model answers the sandbox's conversations
// as its script says. Its servers are its own (Start) or shared with other
// sandboxes (Servers.Join).
type Sandbox struct {
	Forge *Forge
	Model *Route // the model's answers about this sandbox's repositories
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
	// AgentUser is the OS user Agent runs as when it is not this process's
	// (Options.SeparateAgent); nil otherwise.
	AgentUser *OSUser

	servers  *Servers     // stopped with the sandbox when it started them
	ownAgent *AgentServer // stopped with the sandbox
	orgs     []string     // organisations made by AddOrg
}

// Owns reports whether the repository named "owner/name" belongs to the
// sandbox's owner or to an organisation it made.
func (sb *Sandbox) Owns(fullName string) bool {
	owner, _, ok := strings.Cut(fullName, "/")
	if !ok {
		return false
	}
	for _, o := range append([]string{sb.Owner}, sb.orgs...) {
		if strings.EqualFold(o, owner) {
			return true
		}
	}
	return false
}

// Servers are a test forge with the reviewer's account, a scripted model and
// an agent server, shared by the sandboxes that join them. Each sandbox has
// accounts, repositories and a model route of its own, so sandboxes on one
// set of servers can run side by side.
type Servers struct {
	Forge *Forge
	Model *Model
	Agent *AgentServer

	ReviewerUser  string
	ReviewerToken string        // the agent server's reviewer account (every sandbox's); scopes ReviewerScopes
	Reviewer      ReviewerSetup // the reviewer tool and token file the agent server uses
	Dir           string
	// AgentUser is the OS user Agent runs as when it is not this process's
	// (SharedServers, as root); nil otherwise.
	AgentUser *OSUser

	mu     sync.Mutex // guards joined
	joined int        // sandboxes joined so far, to name their accounts
}

// Start brings up servers of its own, seeds a repository with opts.PRs open
// PRs, and routes the model's conversations to opts.Script. On error it stops
// what it started.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	s, err := StartServers(ctx, opts.Dir, opts.AgentName, opts.Log)
	if err != nil {
		return nil, err
	}
	sb, err := s.Join(ctx, opts)
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	sb.servers = s
	return sb, nil
}

// StartServers starts the forge in dir/forge, makes the reviewer's account,
// and starts the model and an agent server (in dir/agent) that knows the
// agent agentName (default configs.Default().AgentName). On error it stops
// what it started.
func StartServers(ctx context.Context, dir, agentName string, log io.Writer) (s *Servers, err error) {
	return startServers(ctx, dir, agentName, log, false, 0)
}

// startServers is StartServers; separate runs the agent server as
// SeparateUser when this machine allows it (otherwise it says why not on
// log), with the reviewer's token file given to that user; the forge runs
// checkWorkers PR re-test workers (forgeSettings.CheckWorkers).
func startServers(ctx context.Context, dir, agentName string, log io.Writer, separate bool, checkWorkers int) (s *Servers, err error) {
	if agentName == "" {
		agentName = configs.Default().AgentName
	}
	if log == nil {
		log = io.Discard
	}
	s = &Servers{Dir: dir, ReviewerUser: "reviewer"}
	started := s // a failed start returns nil: stop what this one started
	defer func() {
		if err != nil {
			err = errors.Join(err, started.Stop())
		}
	}()
	if s.Forge, err = startForge(ctx, filepath.Join(dir, "forge"), log, checkWorkers); err != nil {
		return nil, err
	}
	if _, err = s.Forge.CreateUser(ctx, s.ReviewerUser); err != nil {
		return nil, err
	}
	// The reviewer's token has the scopes an operator gives it, no more.
	if s.ReviewerToken, err = s.Forge.ScopedToken(ctx, s.ReviewerUser, ReviewerScopes); err != nil {
		return nil, err
	}
	if s.Model, err = StartModel(nil); err != nil {
		return nil, err
	}
	// The reviewer as shipped: its definitions, permissions and tool, with
	// the scripted model in place of a real one.
	if s.Reviewer, err = SetUpReviewer(ctx, filepath.Join(dir, "reviewer"), s.Forge.URL, s.ReviewerToken); err != nil {
		return nil, err
	}
	if separate {
		if s.AgentUser, err = separateReviewer(s.Reviewer, log); err != nil {
			return nil, err
		}
	}
	s.Agent, err = StartAgentServer(ctx, filepath.Join(dir, "agent"), AgentOptions{
		ModelURL: s.Model.URL, AgentName: agentName, Log: log, Shipped: true, Env: s.Reviewer.WithFixerShell(), MCP: s.Reviewer.MCP, RunAs: s.AgentUser,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Join seeds a sandbox on the servers: an owner and a pool account of its
// own (named "owner" and "pool-bot" for the first sandbox, with a number
// after for the next ones), the owner's repository "demo" with opts.PRs open
// PRs, and a model route for the owner's repositories that answers as
// opts.Script (default: approve). opts.Dir holds the sandbox's files.
// opts.AgentName is the servers' business, not the sandbox's.
func (s *Servers) Join(ctx context.Context, opts Options) (*Sandbox, error) {
	if opts.Script == nil {
		opts.Script = Reviewer(Approve)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.mu.Lock()
	s.joined++
	suffix := ""
	if s.joined > 1 {
		suffix = strconv.Itoa(s.joined)
	}
	s.mu.Unlock()
	sb := &Sandbox{
		Forge: s.Forge, Agent: s.Agent, Dir: opts.Dir,
		Owner: "owner" + suffix, Repo: "demo", PoolUser: "pool-bot" + suffix,
		ReviewerUser: s.ReviewerUser, ReviewerToken: s.ReviewerToken, Reviewer: s.Reviewer, AgentUser: s.AgentUser,
	}
	sb.Model = s.Model.Route(sb.Owner, opts.Script)
	if err := sb.seedAccounts(ctx); err != nil {
		return nil, err
	}
	if err := sb.seedPRs(ctx, opts.PRs); err != nil {
		return nil, err
	}
	if opts.SeparateAgent {
		if err := sb.startSeparateAgent(ctx, s, opts); err != nil {
			return nil, err
		}
	}
	return sb, nil
}

// Stop stops every server. Safe to call more than once.
func (s *Servers) Stop() error {
	var errs []error
	if s.Agent != nil {
		errs = append(errs, s.Agent.Stop())
	}
	if s.Model != nil {
		s.Model.Close()
	}
	if s.Forge != nil {
		errs = append(errs, s.Forge.Stop())
	}
	return errors.Join(errs...)
}

func (sb *Sandbox) seedAccounts(ctx context.Context) error {
	var err error
	if sb.OwnerToken, err = sb.Forge.CreateUser(ctx, sb.Owner); err != nil {
		return err
	}
	if sb.PoolToken, err = sb.Forge.CreateUser(ctx, sb.PoolUser); err != nil {
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
	change := featureBranch(i)
	file := change.Files[0]
	if err := sb.Forge.CreateBranchWithFile(ctx, sb.OwnerToken, owner, repo, change.Name, file.Path, file.Content); err != nil {
		return 0, "", err
	}
	return sb.createFeaturePR(ctx, owner, repo, i)
}

// featureBranch is PR number i's change: branch feature-i, one commit on
// main adding features/feature-i.txt.
func featureBranch(i int) Branch {
	path := fmt.Sprintf("features/feature-%d.txt", i)
	return Branch{Name: fmt.Sprintf("feature-%d", i), Message: "add " + path,
		Files: []File{{Path: path, Content: fmt.Sprintf("feature %d\n", i)}}}
}

func (sb *Sandbox) createFeaturePR(ctx context.Context, owner, repo string, i int) (int, string, error) {
	return sb.Forge.CreatePR(ctx, sb.OwnerToken, owner, repo, featureBranch(i).Name, "main",
		fmt.Sprintf("Add feature %d", i), fmt.Sprintf("Adds feature %d.", i))
}

// seedPRs opens PRs 1..n as AddPR does, in order, their branches made by
// one push: a push runs the forge's pre- and post-receive hooks once, each
// a start of its binary, where a contents API call a branch ran them for
// each branch (in a test of 6 PRs, 10 of its 92 hook runs).
func (sb *Sandbox) seedPRs(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	dir, err := os.MkdirTemp(sb.Dir, "seed-")
	if err != nil {
		return fmt.Errorf("sandbox: seed PRs: %w", err)
	}
	defer os.RemoveAll(dir)
	branches := make([]Branch, n)
	for i := range branches {
		branches[i] = featureBranch(i + 1)
	}
	if _, err := sb.Bulk(dir).PushEach(ctx, branches); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		number, head, err := sb.createFeaturePR(ctx, sb.Owner, sb.Repo, i)
		if err != nil {
			return err
		}
		sb.PRs = append(sb.PRs, number)
		if err := sb.Forge.PostStatus(ctx, sb.OwnerToken, sb.Owner, sb.Repo, head, CIContext, "success", "", "passed"); err != nil {
			return err
		}
	}
	return nil
}

// AddOrg creates the organisation org, owned by the sandbox's owner, with
// the pool's account in its Owners team: it administers every repository
// of the organisation and may install the organisation's webhook.
func (sb *Sandbox) AddOrg(ctx context.Context, org string) error {
	if err := sb.Forge.CreateOrg(ctx, sb.OwnerToken, org); err != nil {
		return err
	}
	sb.Model.AddOwner(org)
	sb.orgs = append(sb.orgs, org)
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
// The file is replaced whole (a rename), so a pool started a moment before
// never reads it half written.
func (sb *Sandbox) WriteTokenFile() (string, error) {
	path := filepath.Join(sb.Dir, "pool-token")
	tmp, err := os.CreateTemp(sb.Dir, ".pool-token-*")
	if err != nil {
		return "", fmt.Errorf("sandbox: token file: %w", err)
	}
	_, err = tmp.WriteString(sb.PoolToken + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("sandbox: token file: %w", err)
	}
	return path, nil
}

// Stop stops the servers if the sandbox started them (Start); shared ones
// stay up. Safe to call more than once.
func (sb *Sandbox) Stop() error {
	var errs []error
	if sb.ownAgent != nil {
		errs = append(errs, sb.ownAgent.Stop())
	}
	if sb.servers != nil {
		errs = append(errs, sb.servers.Stop())
	}
	return errors.Join(errs...)
}
