package lifecycle_test

import (
	"reflect"
	"strings"
	"testing"

	"pool/forge"
	"pool/forgejo"
	"pool/lifecycle"
	"pool/report"
)

const skipLabel = "needs feedback"

// TestReportAgreesWithTheSupervisor runs every fixture of the decision
// table through the supervisor (Decide) and through `pool report` (the
// snapshot the forge would show, judged by report.Snapshot.MayMerge): both
// must say alike whether the PR may merge now. The report has no memory
// of the PR and sees no session's hint, so for a fixture with either it
// must agree with a supervisor that has neither.
func TestReportAgreesWithTheSupervisor(t *testing.T) {
	direct := 0
	for _, c := range lifecycle.DecisionTable {
		t.Run(c.Name, func(t *testing.T) {
			p, track, o := c.Inputs()
			p.SkipLabel = skipLabel
			if reflect.DeepEqual(track, lifecycle.Track{}) {
				direct++
			}
			snap := snapshotOf(o)
			track = lifecycle.Track{}
			_, act := lifecycle.Decide(p, track, o)
			supervisor := act.Kind == lifecycle.Merge
			rep, why, err := snap.MayMerge(p)
			if err != nil {
				t.Fatal(err)
			}
			if rep != supervisor {
				t.Errorf("report says may merge %v (%s); the supervisor %s (%s)", rep, why, act.Kind, act.Reason)
			}
		})
	}
	if direct < len(lifecycle.DecisionTable)/2 {
		t.Errorf("only %d of %d fixtures are compared as they are", direct, len(lifecycle.DecisionTable))
	}
}

// snapshotOf is what the forge would answer `pool report` for the PR the
// observation describes.
func snapshotOf(o lifecycle.Observation) report.Snapshot {
	pr := forge.PR{Number: 1, Author: o.Author, State: "closed", Merged: o.Merged, Mergeable: o.Mergeable,
		HeadSHA: o.HeadSHA, HeadRepo: "o/r", Updated: o.Updated, BaseSHA: "base0", MergeBase: "base0"}
	if o.Open {
		pr.State = "open"
	}
	if o.Skip {
		pr.Labels = []string{strings.ToUpper(skipLabel)}
	}
	if o.Behind {
		pr.BaseSHA = "base1"
	}
	if o.Fork {
		pr.HeadRepo, pr.MaintainerCanEdit = "someone/r", o.MayUpdate
	}
	pr.Draft = o.Draft
	s := report.Snapshot{Target: forge.Target{Owner: "o", Repo: "r", Number: 1},
		PR: forgejo.PRDetail{PR: pr, Draft: o.Draft}, Protection: o.Protection, Dependencies: o.OpenDependencies}
	for _, r := range o.Reviews {
		s.Reviews = append(s.Reviews, forgejo.ReviewDetail{Review: r})
	}
	for _, c := range o.Checks {
		st := forge.Status{ID: c.ID, Context: c.Context, State: c.State, TargetURL: c.URL,
			Description: c.Description, Created: c.Created}
		if c.Superseded && st.Description == "" {
			st.Description = "Has been cancelled" // Checks sees the rerun after it
		}
		s.Statuses = append(s.Statuses, st)
	}
	return s
}
