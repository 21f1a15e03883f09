package lifecycle

import (
	"slices"
	"testing"
	"time"

	"pool/forge"
)

// unread is what the pool knows of the PR before it reads a fact: full
// without the facts (Facts).
func unread(full Observation) Observation {
	o := full
	o.Reviews, o.HeadParents, o.DiffHash, o.TreeDiffers = nil, nil, "", false
	o.Allowed, o.Outsider, o.PRSessions, o.AuthorSessions = false, false, 0, 0
	o.Checks, o.OpenDependencies, o.Claim, o.Read = nil, nil, forge.ClaimFree, 0
	return o
}

// reveal reads the facts of need from full into o, as the pool's reads do.
func reveal(o, full Observation, need Facts) Observation {
	if need.Has(FactReviews) {
		o.Reviews = full.Reviews
	}
	if need.Has(FactParents) {
		o.HeadParents = full.HeadParents
	}
	if need.Has(FactDiff) {
		o.DiffHash = full.DiffHash
	}
	if need.Has(FactTree) {
		o.TreeDiffers = full.TreeDiffers
	}
	if need.Has(FactBudget) {
		o.Allowed, o.Outsider, o.PRSessions, o.AuthorSessions = full.Allowed, full.Outsider, full.PRSessions, full.AuthorSessions
	}
	if need.Has(FactChecks) {
		o.Checks = full.Checks
	}
	if need.Has(FactDependencies) {
		o.OpenDependencies = full.OpenDependencies
	}
	if need.Has(FactClaims) {
		o.Claim = full.Claim
	}
	o.Read |= need
	return o
}

// gather reads the facts of full that Plan asks for, round by round, as
// the pool's observe does, and returns the observation and the rounds.
func gather(t *testing.T, p Policy, tr Track, full Observation) (Observation, []Facts) {
	t.Helper()
	o := unread(full)
	var rounds []Facts
	for {
		var need Facts
		o, need = Plan(p, tr, o)
		if need == 0 {
			return o, rounds
		}
		if len(rounds) > 8 {
			t.Fatalf("Plan keeps asking: %v", rounds)
		}
		rounds = append(rounds, need)
		o = reveal(o, full, need)
	}
}

// planCases are the decision table's cases, and those of an update the
// pool made, with a slot free.
func planCases() []DecisionCase {
	cases := slices.Clone(DecisionTable)
	for _, style := range []string{"merge", "rebase"} {
		cases = append(cases,
			DecisionCase{Name: style + " update: the approval carries over", Track: updatedTrack(style, "d1"),
				Obs: func(Observation) Observation { o := updatedHead(); o.DiffHash = "d1"; return o }},
			DecisionCase{Name: style + " update: another tree is reviewed again", Track: updatedTrack(style, "d1"),
				Obs: func(Observation) Observation { o := updatedHead(); o.DiffHash, o.TreeDiffers = "d1", true; return o }})
	}
	return cases
}

// TestPlanDecidesAsDecide: for every case of the decision table, the facts
// Plan asks for are all the decision takes: deciding on them alone (the
// others unread) is deciding on the whole observation, with a slot free
// or not, reading ahead or not.
func TestPlanDecidesAsDecide(t *testing.T) {
	for _, tt := range planCases() {
		for _, ahead := range []bool{false, true} {
			p, tr, full := tt.Inputs()
			full.SlotFree, full.ReadAhead = true, ahead
			o, rounds := gather(t, p, tr, full)
			wantTrack, want := Decide(p, tr, full)
			if gotTrack, got := Decide(p, tr, o); got != want || gotTrack != wantTrack {
				t.Errorf("%s (read ahead %v), reads %v: decided %s (%s), want %s (%s)", tt.Name, ahead, rounds,
					got.Kind, got.Reason, want.Kind, want.Reason)
			}
		}
	}
}

// TestPlanReads: the reads each decision makes, round by round.
func TestPlanReads(t *testing.T) {
	failing := approvedWith(status("ci", "failure"))
	updated := func(style string) func(Observation) Observation {
		return func(Observation) Observation { o := updatedHead(); o.DiffHash = "d1"; return o }
	}
	tests := []struct {
		name     string
		policy   Policy
		track    Track
		obs      func(Observation) Observation
		busy     bool // no slot free
		ahead    bool
		want     []Facts
		wantKind Kind
	}{
		{name: "merged", obs: func(o Observation) Observation { o.Merged, o.Open = true, false; return o }, wantKind: Drop},
		{name: "closed", obs: func(o Observation) Observation { o.Open = false; return o }, wantKind: Drop},
		{name: "labelled for humans", obs: func(o Observation) Observation { o.Skip = true; return o }, wantKind: Skip},
		{name: "an auto-merge armed", track: Track{HeadSHA: "h1", ArmedSHA: "h1"}, obs: failing, wantKind: Disarm},
		{name: "new, unreviewed", want: []Facts{FactReviews, FactBudget, FactClaims}, wantKind: Review},
		{name: "new, unreviewed, reading ahead", ahead: true, want: []Facts{FactReviews | FactClaims, FactBudget}, wantKind: Review},
		{name: "unreviewed, decided before: no read ahead", track: Track{HeadSHA: "h1", HeadSeen: now}, ahead: true,
			want: []Facts{FactReviews, FactBudget, FactClaims}, wantKind: Review},
		{name: "unreviewed, no slot free", busy: true, ahead: true, want: []Facts{FactReviews, FactBudget}, wantKind: Review},
		{name: "unreviewed draft", obs: func(o Observation) Observation { o.Draft = true; return o },
			want: []Facts{FactReviews}, wantKind: Wait},
		{name: "changes requested", obs: withReviews(review(forge.ReviewRequestChanges)), want: []Facts{FactReviews}, wantKind: Wait},
		{name: "approved, checks pending", obs: approvedWith(status("ci", "pending")),
			want: []Facts{FactReviews, FactChecks}, wantKind: Wait},
		{name: "approved, no checks yet", policy: withGrace(time.Minute), obs: approvedWith(),
			want: []Facts{FactReviews, FactChecks}, wantKind: Wait},
		{name: "approved and green", obs: approvedWith(status("ci", "success")),
			want: []Facts{FactReviews, FactChecks, FactDependencies}, wantKind: Merge},
		{name: "approved, failing: a fixer", obs: failing,
			want: []Facts{FactReviews, FactChecks, FactClaims}, wantKind: Fix},
		{name: "approved, failing, fixers off", policy: withFixers(true, false), obs: failing,
			want: []Facts{FactReviews, FactChecks}, wantKind: Wait},
		{name: "approved, failing, its fixer started", track: Track{HeadSHA: "h1", FixerSHA: "h1"}, obs: failing,
			want: []Facts{FactReviews, FactChecks}, wantKind: Wait},
		{name: "the head a merge update made", track: updatedTrack("merge", ""), obs: updated("merge"),
			want: []Facts{FactReviews | FactParents | FactTree, FactChecks}, wantKind: Wait},
		{name: "the head a rebase update made", track: updatedTrack("rebase", "d1"), obs: updated("rebase"),
			want: []Facts{FactReviews | FactDiff | FactTree, FactChecks}, wantKind: Wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy
			if tt.policy.DiagnosticEvery != 0 {
				p = tt.policy
			}
			full := open("h1")
			if tt.obs != nil {
				full = tt.obs(full)
			}
			full.SlotFree, full.ReadAhead = !tt.busy, tt.ahead
			o, rounds := gather(t, p, tt.track, full)
			if !slices.Equal(rounds, tt.want) {
				t.Errorf("reads %v, want %v", rounds, tt.want)
			}
			if _, act := Decide(p, tt.track, o); act.Kind != tt.wantKind {
				t.Errorf("decided %s (%s), want %s", act.Kind, act.Reason, tt.wantKind)
			}
		})
	}
}

// TestAnObservationIsWeighedOnce: over the rounds of Plan and the one
// Decide of an observation, its reviews are weighed (Policy.Approval) and
// its checks summed up (Summarize) once each.
func TestAnObservationIsWeighedOnce(t *testing.T) {
	counts := map[string]int{}
	weighed = func(what string) { counts[what]++ }
	defer func() { weighed = func(string) {} }()
	for _, tt := range planCases() {
		clear(counts)
		p, tr, full := tt.Inputs()
		full.SlotFree = true
		o, rounds := gather(t, p, tr, full)
		Decide(p, tr, o)
		for _, what := range []string{"approval", "summary"} {
			if counts[what] > 1 {
				t.Errorf("%s, reads %v: %d weighings of the %s, want at most one", tt.Name, rounds, counts[what], what)
			}
		}
	}
}
