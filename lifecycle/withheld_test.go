package lifecycle

import "testing"

// TestSessionsWithheld: a draft, an outsider's PR and a PR over budget get
// no session; the last two get one note per head and reason, and a
// maintainer's label gives them sessions again.
func TestSessionsWithheld(t *testing.T) {
	budget := policy
	budget.BudgetPR, budget.BudgetAuthor = 3, 10
	tests := []struct {
		name string
		edit func(*Observation)
		want Kind
	}{
		{"a collaborator's PR", func(*Observation) {}, Review},
		{"a draft", func(o *Observation) { o.Draft = true }, Wait},
		{"an outsider's PR", func(o *Observation) { o.Outsider = true }, NoteWithheld},
		{"an outsider's PR with the label", func(o *Observation) { o.Outsider, o.Allowed = true, true }, Review},
		{"under both budgets", func(o *Observation) { o.PRSessions, o.AuthorSessions = 2, 9 }, Review},
		{"the PR's budget spent", func(o *Observation) { o.PRSessions = 3 }, NoteWithheld},
		{"the author's budget spent", func(o *Observation) { o.AuthorSessions = 10 }, NoteWithheld},
		{"over budget with the label", func(o *Observation) { o.PRSessions, o.Allowed = 30, true }, Review},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := open("h1")
			tt.edit(&o)
			got, act := Decide(budget, Track{}, o)
			if act.Kind != tt.want {
				t.Fatalf("kind = %s (%s), want %s", act.Kind, act.Reason, tt.want)
			}
			if act.Kind != NoteWithheld {
				return
			}
			got.NotedBlock = act.Marks.BlockNoted // the note was posted
			if _, again := Decide(budget, got, o); again.Kind != Wait {
				t.Errorf("after the note: %s (%s), want wait", again.Kind, again.Reason)
			}
			o2 := o
			o2.HeadSHA = "h2"
			if _, next := Decide(budget, got, o2); next.Kind != NoteWithheld {
				t.Errorf("a new head: %s, want a note for it", next.Kind)
			}
		})
	}
}
