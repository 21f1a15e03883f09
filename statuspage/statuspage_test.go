package statuspage

import (
	"reflect"
	"testing"
)

// TestTrains: the trains are gathered from the rows, front car first, by
// repository and base; a done PR and one riding no train are left out, and
// a row from before the train moved leaves no gap.
func TestTrains(t *testing.T) {
	st := Status{PRs: []PR{
		{Number: 3, Car: 2, Cars: 3, Train: "main"},
		{Number: 1, Car: 1, Cars: 3, Train: "main"},
		{Number: 4, Car: 1, Cars: 1, Train: "release"},
		{Number: 5},
		{Number: 6, Car: 3, Cars: 3, Train: "main", Done: true},
		{Repo: "acme/gadgets", Number: 1, Car: 1, Cars: 2, Train: "main"},
		{Number: 9, Car: 5, Cars: 5, Train: "main"},
	}}
	want := []Train{{Base: "main", PRs: []int{1, 3, 9}}, {Base: "release", PRs: []int{4}}, {Repo: "acme/gadgets", Base: "main", PRs: []int{1}}}
	if got := st.Trains(); !reflect.DeepEqual(got, want) {
		t.Errorf("Trains = %+v, want %+v", got, want)
	}
	if got := (Status{PRs: []PR{{Number: 1}}}).Trains(); got != nil {
		t.Errorf("Trains with no car = %+v, want none", got)
	}
}
