package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestOrganisationServedAndRelisted: `pool hook install --org` installs one
// organisation hook; a pool started with --org serves the organisation's
// repositories (and the named one beside it), woken by that hook; a
// repository made while it runs, empty at first, is tried at each listing
// and served once it has its branch; an archived one's pool stops. Every
// PR merges after one reviewer session, and the exit is clean.
func TestOrganisationServedAndRelisted(t *testing.T) {
	parallel(t)
	ctx := testContext(t)
	sb := startSandbox(t, ctx, 0, nil)
	const org = "acme"
	if err := sb.AddOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if err := sb.AddOrgRepo(ctx, org, name); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.AddOrgPR(ctx, org, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildPool(t)
	addr := freeAddr(t)
	hookURL := "http://" + addr + "/hook"
	env := poolEnv(t, sb, t.TempDir(), "POOL_ORG="+org, "POOL_ORG_RELIST=2s", "POOL_IDLE_EXIT=0",
		"POOL_WEBHOOK_SECRET=s3cret-for-tests", "POOL_LOG_LEVEL=debug")

	install := exec.CommandContext(ctx, bin, "hook", "install", "--hook-url", hookURL)
	install.Env = env
	var out bytes.Buffer
	install.Stdout, install.Stderr = &out, &out
	if err := install.Run(); err != nil {
		t.Fatalf("pool hook install: %v\n%s", err, out.String())
	}
	var hooks []struct {
		Config map[string]string `json:"config"`
	}
	if _, err := sb.Forge.Do(ctx, sb.OwnerToken, "GET", "/orgs/"+org+"/hooks", nil, &hooks); err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].Config["url"] != hookURL {
		t.Fatalf("hooks of %s after pool hook install --org: %+v, want one at %s\n%s", org, hooks, hookURL, out.String())
	}

	pool := startPool(t, ctx, bin, env, "--workers", "2", "--listen", addr)
	merged := func(repo string) func() bool {
		return func() bool {
			m, err := mergedOn(ctx, sb, org, repo, 1)
			return err == nil && m
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		eventually(t, ctx, org+"/"+name+"#1 merged", merged(name), pool)
	}
	eventually(t, ctx, "a delivery of the organisation's hook", func() bool {
		return strings.Contains(pool.stderr.String(), `msg=delivery`) && strings.Contains(pool.stderr.String(), "wake=true")
	}, pool)

	// A repository made while the pool runs, empty at first: it has no
	// default branch to serve yet, and is tried again at each listing.
	if err := sb.AddEmptyOrgRepo(ctx, org, "gamma"); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the empty repository tried, to be tried again", func() bool {
		return strings.Contains(pool.stderr.String(), "trying it again at the next listing") &&
			strings.Contains(pool.stderr.String(), "repo=acme/gamma")
	}, pool)
	if err := sb.InitRepo(ctx, org, "gamma"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.AddOrgPR(ctx, org, "gamma", 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, org+"/gamma#1 merged", merged("gamma"), pool)

	if err := sb.Forge.ArchiveRepo(ctx, sb.OwnerToken, org, "alpha"); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the archived repository's pool stopped", func() bool {
		return strings.Contains(pool.stderr.String(), `msg="a repository is no longer listed; stopping its pool" repo=acme/alpha`)
	}, pool)
	_ = pool.cmd.Process.Signal(sigterm)
	pool.wait(t, ctx)

	report := pool.stdout.String()
	for _, want := range []string{"TOTAL_PRS_REVIEWED: 3\n", "BY_REPOSITORY:\n", "  - acme/alpha: reviewed 1, merged 1,",
		"  - acme/beta: reviewed 1, merged 1,", "  - acme/gamma: reviewed 1, merged 1,", "  - " + sb.Owner + "/demo: reviewed 0, merged 0,"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	assertOneSessionPerHead(t, sb, 3) // the three repositories' #1
	assertNoSessions(t, ctx, sb)
}
