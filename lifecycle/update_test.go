package lifecycle

import (
	"testing"
	"time"

	"pool/forge"
)

// outdatedRule is a fully read protection that blocks outdated branches
// and requires the check "ci".
var outdatedRule = forge.Protection{Protected: true, Full: true, UserCanMerge: true, BlockOnOutdated: true,
	StatusCheck: true, StatusContexts: []string{"ci"}}

// behindGreen is h1, approved by bob, green, behind base b2 under the rule.
func behindGreen() Observation {
	o := approvedWith(status("ci", "success"))(open("h1"))
	o.Protection, o.Behind, o.BaseSHA, o.MayUpdate = outdatedRule, true, "b2", true
	return o
}

// updatedHead is the head h2 the pool's merge update of h1 with base b2
// made, its checks pending, no longer behind.
func updatedHead() Observation {
	o := behindGreen()
	o.HeadSHA, o.Behind = "h2", false
	o.HeadParents = []string{"h1", "b2"}
	o.MergeBase = "b2"
	o.Checks = []Check{status("ci", "pending")}
	return o
}

// updatedTrack is the track after the pool updated h1 onto b2.
func updatedTrack(style, diff string) Track {
	tr, _ := Decide(policy, Track{}, behindGreen())
	return Updated(tr, HeadUpdate{From: "h1", Base: "b2", Produced: "h2", OldMergeBase: "b1", Style: style, Diff: diff, At: now})
}

// TestCarryOver: the approval of the head the pool updated carries over
// to the new head only when the pool made that head, the protection does
// not dismiss stale approvals (and the pool can read it), and the forge
// still counts the approval; otherwise the new head is reviewed like any
// new push.
func TestCarryOver(t *testing.T) {
	tests := []struct {
		name  string
		style string
		diff  string
		obs   func(Observation) Observation
		want  bool
	}{
		{name: "merge update by the pool carries over", want: true},
		{name: "the merge's parents are the approved head and the base tip seen", style: "merge", want: true},
		{name: "an author pushed during the update: reviewed again", obs: func(o Observation) Observation {
			o.HeadParents = []string{"h2-pool-merge"}
			return o
		}},
		{name: "a merge with another base tip than the pool saw", obs: func(o Observation) Observation {
			o.HeadParents = []string{"h1", "b3"}
			return o
		}},
		{name: "parents in the other order", obs: func(o Observation) Observation {
			o.HeadParents = []string{"b2", "h1"}
			return o
		}},
		{name: "the protection dismisses stale approvals", obs: func(o Observation) Observation {
			o.Protection.DismissStale = true
			return o
		}},
		{name: "a protection the token cannot read whole: the forge's flags on the approval decide", want: true,
			obs: func(o Observation) Observation { o.Protection = unreadable(o.Protection); return o }},
		{name: "the forge dismissed the approval", obs: func(o Observation) Observation {
			o.Reviews[0].Dismissed = true
			return o
		}},
		{name: "the forge does not count the approval (not official)", obs: func(o Observation) Observation {
			o.Reviews[0].Official = false
			return o
		}},
		{name: "the approval went stale", obs: func(o Observation) Observation {
			o.Reviews[0].Stale = true
			return o
		}},
		{name: "rebase with the PR's diff byte for byte the approved one", style: "rebase", diff: "d1",
			obs: func(o Observation) Observation { o.HeadParents, o.DiffHash = nil, "d1"; return o }, want: true},
		{name: "rebase that changed the PR's diff", style: "rebase", diff: "d1",
			obs: func(o Observation) Observation { o.HeadParents, o.DiffHash = nil, "d2"; return o }},
		{name: "a force-push after the update of a merge with the right parents", obs: func(o Observation) Observation {
			o.HeadSHA = "h2-evil"
			return o
		}},
		{name: "the merge's tree is not the merge of the approved head and the base tip", obs: func(o Observation) Observation {
			o.TreeDiffers = true
			return o
		}},
		{name: "a rebase's tree is not the merge of the approved head and the base tip", style: "rebase", diff: "d1",
			obs: func(o Observation) Observation { o.HeadParents, o.DiffHash, o.TreeDiffers = nil, "d1", true; return o }},
		{name: "a train's car: the base tip first, the approved head second", style: StyleTrain, want: true,
			obs: func(o Observation) Observation { o.HeadParents = []string{"b2", "h1"}; return o }},
		{name: "a train's car with the parents of a forge's merge update", style: StyleTrain,
			obs: func(o Observation) Observation { o.HeadParents = []string{"h1", "b2"}; return o }},
		{name: "a train's car on another base tip than the pool saw", style: StyleTrain,
			obs: func(o Observation) Observation { o.HeadParents = []string{"b3", "h1"}; return o }},
		{name: "a train's car whose tree is not the merge", style: StyleTrain,
			obs: func(o Observation) Observation { o.HeadParents, o.TreeDiffers = []string{"b2", "h1"}, true; return o }},
		{name: "a train's car with dismissed stale approvals", style: StyleTrain,
			obs: func(o Observation) Observation {
				o.HeadParents, o.Protection.DismissStale = []string{"b2", "h1"}, true
				return o
			}},
		{name: "the head is still the approved one", obs: func(o Observation) Observation {
			o.HeadSHA = "h1"
			return o
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			style := tt.style
			if style == "" {
				style = "merge"
			}
			tr := updatedTrack(style, tt.diff)
			o := updatedHead()
			if tt.obs != nil {
				o = tt.obs(o)
			}
			if got := policy.Rule.CarriesOver(tr.Update, o); got != tt.want {
				t.Errorf("CarriesOver = %v, want %v", got, tt.want)
			}
			if o.HeadSHA == "h1" {
				return // approved at its own head: nothing to carry
			}
			v := policy.Approval(tr, o)
			if (v.State == forge.ReviewApproved) != tt.want || v.Carried != tt.want {
				t.Errorf("Approval = %+v, want approved and carried: %v", v, tt.want)
			}
			_, act := Decide(policy, tr, o)
			if tt.want && act.Kind == Review || !tt.want && act.Kind != Review {
				t.Errorf("Decide: %s (%s), want a review: %v", act.Kind, act.Reason, !tt.want)
			}
		})
	}
}

// unreadable is p as a token that is no repository admin's reads it: the
// branch summary only.
func unreadable(p forge.Protection) forge.Protection {
	return forge.Protection{Protected: p.Protected, Rule: p.Rule, UserCanMerge: p.UserCanMerge,
		RequiredApprovals: p.RequiredApprovals, StatusCheck: p.StatusCheck, StatusContexts: p.StatusContexts}
}

// TestCarryOverWithARuleTheTokenCannotRead: a token that cannot read the
// protection whole (not a repository admin's) cannot see whether the forge
// dismisses stale approvals. The approval carries over where the forge's
// own reads after the update show it kept: by an account the rule counts,
// official, not dismissed, not stale; and only onto a head the pool's
// update made, its tree checked, as with any token.
func TestCarryOverWithARuleTheTokenCannotRead(t *testing.T) {
	counted := policy
	counted.Rule.Reviewers = []string{"bob"}
	tests := []struct {
		name  string
		style string
		rule  ReviewRule
		obs   func(Observation) Observation
		want  bool
	}{
		{name: "the forge shows the approval kept: official, not dismissed, not stale", want: true},
		{name: "by a listed reviewer", rule: counted.Rule, want: true},
		{name: "a train's car, the approval kept", style: StyleTrain, want: true,
			obs: func(o Observation) Observation { o.HeadParents = []string{"b2", "h1"}; return o }},
		{name: "the forge marked the approval stale (it found the PR's content changed)",
			obs: func(o Observation) Observation { o.Reviews[0].Stale = true; return o }},
		{name: "the forge dismissed the approval (a hidden dismiss_stale_approvals)",
			obs: func(o Observation) Observation { o.Reviews[0].Dismissed = true; return o }},
		{name: "the approval is not official (not on a hidden approvals whitelist)",
			obs: func(o Observation) Observation { o.Reviews[0].Official = false; return o }},
		{name: "the approval is not official, though the rule lets listed accounts count unofficially",
			rule: ReviewRule{Reviewers: []string{"bob"}, AllowUnofficial: true},
			obs:  func(o Observation) Observation { o.Reviews[0].Official = false; return o }},
		{name: "the approver is not an account the rule counts", rule: ReviewRule{Reviewers: []string{"carol"}}},
		{name: "the approval is the author's own",
			obs: func(o Observation) Observation { o.Reviews[0].Author = o.Author; return o }},
		{name: "an approval kept by the forge on another commit than the approved head",
			obs: func(o Observation) Observation { o.Reviews[0].CommitID = "h0"; return o }},
		{name: "an author pushed during the update, the approval still shown kept",
			obs: func(o Observation) Observation { o.HeadParents = []string{"h2-pool-merge"}; return o }},
		{name: "a force-push after the update, the approval still shown kept",
			obs: func(o Observation) Observation { o.HeadSHA = "h2-evil"; return o }},
		{name: "the merge's tree is not the merge of the approved head and the base tip",
			obs: func(o Observation) Observation { o.TreeDiffers = true; return o }},
		{name: "a rebase that changed the PR's diff", style: "rebase",
			obs: func(o Observation) Observation { o.HeadParents, o.DiffHash = nil, "d2"; return o }},
		{name: "a train's car on another base tip than the pool saw", style: StyleTrain,
			obs: func(o Observation) Observation { o.HeadParents = []string{"b3", "h1"}; return o }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			style := tt.style
			if style == "" {
				style = "merge"
			}
			pol := policy
			if tt.rule.Reviewers != nil {
				pol.Rule = tt.rule
			}
			tr := updatedTrack(style, "d1")
			o := updatedHead()
			o.Protection = unreadable(o.Protection)
			if tt.obs != nil {
				o = tt.obs(o)
			}
			if got := pol.Rule.CarriesOver(tr.Update, o); got != tt.want {
				t.Errorf("CarriesOver = %v, want %v", got, tt.want)
			}
			if v := pol.Approval(tr, o); (v.State == forge.ReviewApproved) != tt.want || v.Carried != tt.want {
				t.Errorf("Approval = %+v, want approved and carried: %v", v, tt.want)
			}
		})
	}
}

// TestCarryOverYieldsToAReviewOnTheNewHead: a counted review on the new
// head decides; the carried approval does not hide a request for changes.
func TestCarryOverYieldsToAReviewOnTheNewHead(t *testing.T) {
	o := updatedHead()
	o.Reviews = append(o.Reviews, forge.Review{ID: 2, Author: "carol", State: forge.ReviewRequestChanges, CommitID: "h2", Official: true})
	if v := policy.Approval(updatedTrack("merge", ""), o); v.State != forge.ReviewRequestChanges || v.Carried {
		t.Errorf("Approval = %+v, want the request for changes on the new head", v)
	}
}

// TestARequestForChangesStandsOverThePoolsUpdate: bob approved h1; carol
// (a counted account) requested changes on h1, too late for the pool's
// update, which made h2 of h1 and the base. Her request stands for h2
// until she approves or the author pushes: a head that differs by the base
// alone answers nothing.
func TestARequestForChangesStandsOverThePoolsUpdate(t *testing.T) {
	carol := func(id int64, state, head string) forge.Review {
		return forge.Review{ID: id, Author: "carol", State: state, CommitID: head, Official: true}
	}
	tests := []struct {
		name string
		obs  func(Observation) Observation
		want string // the verdict's state
	}{
		{name: "her request on h1 stands for h2", want: forge.ReviewRequestChanges},
		{name: "a stale flag does not lift it: the forge blocks on it still", want: forge.ReviewRequestChanges,
			obs: func(o Observation) Observation { o.Reviews[1].Stale = true; return o }},
		{name: "nor does an approval by another account on h2", want: forge.ReviewRequestChanges,
			obs: func(o Observation) Observation {
				o.Reviews = append(o.Reviews, forge.Review{ID: 3, Author: "bob", State: forge.ReviewApproved, CommitID: "h2", Official: true})
				return o
			}},
		{name: "her own approval on h2 answers it", want: forge.ReviewApproved,
			obs: func(o Observation) Observation {
				o.Reviews = append(o.Reviews, carol(3, forge.ReviewApproved, "h2"))
				return o
			}},
		{name: "dismissed, it is gone; bob's approval carries over", want: forge.ReviewApproved,
			obs: func(o Observation) Observation { o.Reviews[1].Dismissed = true; return o }},
		{name: "a head with the author's push is a new head", want: "",
			obs: func(o Observation) Observation { o.HeadParents = []string{"h2-pool-merge"}; return o }},
		{name: "a comment is no verdict", want: forge.ReviewApproved,
			obs: func(o Observation) Observation { o.Reviews[1].State = forge.ReviewComment; return o }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := updatedHead()
			o.Reviews = append(o.Reviews, carol(2, forge.ReviewRequestChanges, "h1"))
			if tt.obs != nil {
				o = tt.obs(o)
			}
			if v := policy.Approval(updatedTrack("merge", ""), o); v.State != tt.want {
				t.Errorf("Approval = %+v, want state %q", v, tt.want)
			}
		})
	}
}

// TestARequestOnTheMergedParentStands: carol requested changes on h1;
// another pool (or the author's "update branch") merged the base into it,
// making h3, and this pool remembers no update. Whether her request stands
// takes h3's parents, read only because of it; it stands while h3 merges
// h1 and the forge has not marked her request stale.
func TestARequestOnTheMergedParentStands(t *testing.T) {
	tests := []struct {
		name    string
		parents []string
		stale   bool
		bob     bool // bob approved h3 since
		want    string
	}{
		{name: "a merge of h1 and the base", parents: []string{"h1", "b3"}, want: forge.ReviewRequestChanges},
		{name: "a merge of h1 and the base, bob approved it", parents: []string{"h1", "b3"}, bob: true, want: forge.ReviewRequestChanges},
		{name: "the forge marked her request stale: new content", parents: []string{"h1", "b3"}, stale: true, want: ""},
		{name: "a commit on top of h1", parents: []string{"h1"}, want: ""},
		{name: "a merge of other commits", parents: []string{"h2", "b3"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := open("h3")
			o.Reviews = []forge.Review{{ID: 1, Author: "carol", State: forge.ReviewRequestChanges, CommitID: "h1", Official: true, Stale: tt.stale}}
			if tt.bob {
				o.Reviews = append(o.Reviews, forge.Review{ID: 2, Author: "bob", State: forge.ReviewApproved, CommitID: "h3", Official: true})
			}
			o.Read = FactReviews
			wantParents := !tt.stale
			if got := approvalFacts(policy.Rule, Track{}, o).Has(FactParents); got != wantParents {
				t.Errorf("the parents are asked for: %v, want %v", got, wantParents)
			}
			o.HeadParents, o.Read = tt.parents, o.Read|FactParents
			want := tt.want
			if want == "" && tt.bob {
				want = forge.ReviewApproved
			}
			if v := policy.Approval(Track{}, o); v.State != want {
				t.Errorf("Approval = %+v, want state %q", v, want)
			}
		})
	}
}

// TestBehindHeadIsUpdatedThenMerged walks one PR through the update: an
// approved, green head behind its base is updated (not merged, not
// blocked); until the new head shows it waits; the new head, its approval
// carried over, waits for its checks after the update, then merges. The
// next push forgets the update.
func TestBehindHeadIsUpdatedThenMerged(t *testing.T) {
	tr, act := Decide(policy, Track{}, behindGreen())
	if act.Kind != Update || tr.State != OutOfDate {
		t.Fatalf("behind and green: %s/%s, want an update", act.Kind, tr.State)
	}
	tr = Updated(tr, HeadUpdate{From: "h1", Base: "b2", Produced: "h2", OldMergeBase: "b1", Style: "merge", At: now})
	if tr, act = Decide(policy, tr, behindGreen()); act.Kind != Wait || tr.State != Updating {
		t.Fatalf("the old head still shows after the update: %s/%s, want a wait in %s", act.Kind, tr.State, Updating)
	}
	if tr, act = Decide(policy, tr, updatedHead()); act.Kind != Wait || tr.State != UpdateChecks || act.Reason != "waiting for checks after update" {
		t.Fatalf("the new head, checks pending: %s/%s %q, want a wait in %s", act.Kind, tr.State, act.Reason, UpdateChecks)
	}
	if !tr.HoldsUpdate() {
		t.Errorf("%s does not hold the base's update", tr.State)
	}
	green := updatedHead()
	green.Checks = []Check{status("ci", "success")}
	if tr, act = Decide(policy, tr, green); act.Kind != Merge || tr.State != MergeQueued {
		t.Fatalf("the new head green: %s/%s, want merge", act.Kind, tr.State)
	}
	pushed := green
	pushed.HeadSHA, pushed.HeadParents = "h3", []string{"h2"}
	if tr, act = Decide(policy, tr, pushed); act.Kind != Review || tr.Update.Made() {
		t.Errorf("a push after the update: %s, update remembered %v; want a review and the update forgotten", act.Kind, tr.Update.Made())
	}
}

// TestWhatIsNotUpdated: nothing the pool would not merge next is updated.
func TestWhatIsNotUpdated(t *testing.T) {
	tests := []struct {
		name     string
		policy   func(Policy) Policy
		obs      func(Observation) Observation
		wantKind Kind
	}{
		{name: "not approved", obs: func(o Observation) Observation { o.Reviews = nil; return o }, wantKind: Review},
		{name: "checks failing", obs: func(o Observation) Observation { o.Checks = []Check{status("ci", "failure")}; return o }, wantKind: Fix},
		{name: "checks pending", obs: func(o Observation) Observation { o.Checks = []Check{status("ci", "pending")}; return o }, wantKind: Wait},
		{name: "held for humans", obs: func(o Observation) Observation { o.Skip = true; return o }, wantKind: Skip},
		{name: "a fork that does not let maintainers edit", obs: func(o Observation) Observation { o.MayUpdate = false; return o }, wantKind: NoteBlocked},
		{name: "update never: blocked, one note", policy: func(p Policy) Policy { p.Update = UpdateNever; return p }, wantKind: NoteBlocked},
		{name: "no block on outdated branches: merged as is", obs: func(o Observation) Observation {
			o.Protection.BlockOnOutdated = false
			return o
		}, wantKind: Merge},
		{name: "update always, even without the block", policy: func(p Policy) Policy { p.Update = UpdateAlways; return p },
			obs: func(o Observation) Observation { o.Protection.BlockOnOutdated = false; return o }, wantKind: Update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, o := policy, behindGreen()
			if tt.policy != nil {
				p = tt.policy(p)
			}
			if tt.obs != nil {
				o = tt.obs(o)
			}
			if _, act := Decide(p, Track{}, o); act.Kind != tt.wantKind {
				t.Errorf("%s (%s), want %s", act.Kind, act.Reason, tt.wantKind)
			}
		})
	}
}

// TestRefusedMergeWaitsForAChange: a merge the forge refused for a rule is
// not called again at once: the head waits, with one note and no attempt
// counted, until the back-off ends or the base, the checks, the reviews or
// the protection change.
func TestRefusedMergeWaitsForAChange(t *testing.T) {
	obs := approvedWith(status("ci", "success"))(open("h1"))
	obs.BaseSHA, obs.Updated = "b1", now.Add(-time.Hour)
	msg := "not ready to merge: Not all required status checks successful"
	res := forge.MergeResult{Outcome: forge.MergeBlocked, Status: 405, Message: msg, Rule: forge.RefusalRule(405, msg)}
	tr, _ := Decide(policy, Track{}, obs)
	tr, act := AfterMerge(policy, tr, "h1", res, now)
	if act.Kind != NoteBlocked || tr.State != MergeRefused || tr.Attempts != 0 || tr.Refused != forge.RuleStatusCheck {
		t.Fatalf("refusal: %s/%s, %d attempts, rule %q; want one note, %s, no attempt, %s", act.Kind, tr.State, tr.Attempts, tr.Refused, MergeRefused, forge.RuleStatusCheck)
	}
	tr = tr.Mark(act.Marks) // the note was posted
	same := obs
	same.Now = now.Add(time.Second)
	if tr, act = Decide(policy, tr, same); act.Kind != Wait {
		t.Fatalf("nothing changed: %s, want a wait", act.Kind)
	}
	for name, change := range map[string]func(Observation) Observation{
		"the base moved": func(o Observation) Observation { o.BaseSHA = "b2"; return o },
		"a check reported again": func(o Observation) Observation {
			o.Checks = []Check{{ID: 2, Context: "ci", State: "success"}}
			return o
		},
		"a new review": func(o Observation) Observation {
			o.Reviews = append(o.Reviews, forge.Review{ID: 9, Author: "carol", State: forge.ReviewApproved, CommitID: "h1", Official: true})
			return o
		},
		"the protection changed": func(o Observation) Observation { o.Protection.RequiredApprovals = 1; return o },
		"the back-off ended":     func(o Observation) Observation { o.Now = tr.RefusedUntil; return o },
	} {
		if _, act := Decide(policy, tr, change(same)); act.Kind != Merge {
			t.Errorf("%s: %s (%s), want merge", name, act.Kind, act.Reason)
		}
	}
}

// TestBehindRefusalLeadsToTheUpdate: a merge refused because the branch is
// behind (a rule the pool could not read) is cured by the update: the
// next decision, with the rule learned, updates it at once.
func TestBehindRefusalLeadsToTheUpdate(t *testing.T) {
	obs := behindGreen()
	obs.Protection = forge.Protection{Protected: true, UserCanMerge: true, StatusCheck: true, StatusContexts: []string{"ci"}}
	tr, act := Decide(policy, Track{}, obs)
	if act.Kind != Merge {
		t.Fatalf("rule unread: %s, want merge", act.Kind)
	}
	msg := `{"message":"not ready to merge: The head branch is behind the base branch"}`
	res := forge.MergeResult{Outcome: forge.ClassifyMerge(405, msg), Status: 405, Message: msg, Rule: forge.RefusalRule(405, msg)}
	tr, _ = AfterMerge(policy, tr, "h1", res, now)
	learned, isNew := Learn(obs.Protection, res.Rule)
	if !isNew || !learned.BlockOnOutdated {
		t.Fatalf("Learn(%q) = %+v, %v; want block_on_outdated_branch learned", res.Rule, learned, isNew)
	}
	obs.Protection = learned
	if _, act = Decide(policy, tr, obs); act.Kind != Update {
		t.Errorf("after the refusal, rule learned: %s (%s), want an update", act.Kind, act.Reason)
	}
	never := policy
	never.Update = UpdateNever
	if _, act = Decide(never, tr, obs); act.Kind == Merge || act.Kind == Update {
		t.Errorf("update never: %s, want a block", act.Kind)
	}
}

// TestRefusedUpdateBacksOff: an update the forge refused (the pool may not
// push to the branch) gets one note and no second update call at once.
func TestRefusedUpdateBacksOff(t *testing.T) {
	o := behindGreen()
	o.Updated = now.Add(-time.Hour)
	tr, _ := Decide(policy, Track{}, o)
	tr, act := UpdateRefused(policy, tr, "h1", 403, now)
	if act.Kind != NoteBlocked || tr.State != MergeRefused {
		t.Fatalf("refused update: %s/%s, want one note and %s", act.Kind, tr.State, MergeRefused)
	}
	tr = tr.Mark(act.Marks) // the note was posted
	o.Now = now.Add(time.Second)
	if tr, act = Decide(policy, tr, o); act.Kind != Wait {
		t.Errorf("right after the refused update: %s, want a wait", act.Kind)
	}
	o.Now = tr.RefusedUntil
	if _, act = Decide(policy, tr, o); act.Kind != Update {
		t.Errorf("after the back-off: %s, want another update", act.Kind)
	}
}

// TestTheNewHeadWaitsForTheForge: the forge shows the rebased head with
// the merge base from before the update (it recomputes it after the
// push), so its diff is stale: the head waits instead of being reviewed,
// and is judged once the forge has caught up.
func TestTheNewHeadWaitsForTheForge(t *testing.T) {
	tr := updatedTrack("rebase", "d1")
	o := updatedHead()
	o.HeadParents, o.DiffHash, o.MergeBase = nil, "d-stale", "b1"
	tr, act := Decide(policy, tr, o)
	if act.Kind != Wait || tr.State != Updating {
		t.Fatalf("new head, old merge base: %s/%s, want a wait in %s", act.Kind, tr.State, Updating)
	}
	o.DiffHash, o.MergeBase = "d1", "b2"
	if tr, act = Decide(policy, tr, o); act.Kind != Wait || tr.State != UpdateChecks {
		t.Errorf("the forge caught up: %s/%s, want the approval carried over and a wait for checks", act.Kind, tr.State)
	}
	stuck := updatedHead()
	stuck.HeadParents, stuck.DiffHash, stuck.MergeBase = nil, "d-stale", "b1"
	stuck.Now = now.Add(policy.RetryMax)
	if _, act = Decide(policy, updatedTrack("rebase", "d1"), stuck); act.Kind != Review {
		t.Errorf("the forge never caught up: %s, want a review after RetryMax", act.Kind)
	}
}

// TestAReadOfTheOldHeadKeepsTheUpdate: a read from before the update, decided
// after the new head was seen, neither updates the PR again nor forgets the
// update, so the new head's approval still carries over when it shows again.
func TestAReadOfTheOldHeadKeepsTheUpdate(t *testing.T) {
	tr, act := Decide(policy, updatedTrack("merge", ""), updatedHead())
	if act.Kind != Wait || tr.State != UpdateChecks {
		t.Fatalf("the new head: %s/%s, want a wait in %s", act.Kind, tr.State, UpdateChecks)
	}
	if tr, act = Decide(policy, tr, behindGreen()); act.Kind != Wait || tr.State != Updating || !tr.Update.Made() {
		t.Fatalf("an old read of the updated head: %s/%s, update remembered %v; want a wait in %s, the update kept",
			act.Kind, tr.State, tr.Update.Made(), Updating)
	}
	if tr, act = Decide(policy, tr, updatedHead()); act.Kind != Wait || tr.State != UpdateChecks {
		t.Errorf("the new head again: %s/%s, want the approval carried over and a wait in %s", act.Kind, tr.State, UpdateChecks)
	}
}

// TestOneUpdateHolderPerBase: of the PRs that hold the base's update, the
// one the pool updated last holds it; one that let go of it and holds
// again waits for that one.
func TestOneUpdateHolderPerBase(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	updated := func(s State, at time.Time) Track {
		return Track{State: s, HeadSHA: "new", Update: HeadUpdate{From: "old", At: at}}
	}
	tests := []struct {
		name   string
		tracks map[int]Track
		want   int
	}{
		{name: "none updated", tracks: map[int]Track{1: {State: OutOfDate}, 2: {State: CIPending}}, want: 0},
		{name: "the updated one let go", tracks: map[int]Track{1: updated(CIFailing, t0), 2: {State: OutOfDate}}, want: 0},
		{name: "one holds", tracks: map[int]Track{1: updated(UpdateChecks, t0), 2: {State: OutOfDate}}, want: 1},
		{name: "two hold: the later update", tracks: map[int]Track{
			1: updated(OutOfDate, t0), 2: updated(OutOfDate, t0.Add(time.Minute))}, want: 2},
		{name: "two hold at one time: the lower number", tracks: map[int]Track{
			3: updated(OutOfDate, t0), 2: updated(CIPending, t0)}, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UpdateHolder(tc.tracks); got != tc.want {
				t.Errorf("UpdateHolder = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestARefusalForARuleIsNoServerError: a merge refused for a rule, or an
// update the forge does not allow, is a refusal the head will likely meet
// again; a server error's (the merge's or the update's 5xx) is not.
func TestARefusalForARuleIsNoServerError(t *testing.T) {
	for _, c := range []struct {
		rule string
		want bool
	}{
		{forge.RuleApprovals, true}, {forge.RuleQuota, true}, {forge.RulePushRejected, true}, {ruleUpdateRefused, true},
		{ruleServerError, false}, {ruleUpdateFailed, false},
	} {
		if got := (Track{Refusals: 1, Refused: c.rule}).RefusedForARule(); got != c.want {
			t.Errorf("refused for %q: RefusedForARule = %v, want %v", c.rule, got, c.want)
		}
	}
	if (Track{}).RefusedForARule() {
		t.Errorf("a head never refused: RefusedForARule = true")
	}
}
