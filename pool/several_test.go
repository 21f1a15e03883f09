package pool

import (
	"slices"
	"testing"
)

func TestMergeTargetsKeepsEachRepositoryOnce(t *testing.T) {
	got := mergeTargets([]string{"x/y", "acme/a"}, []string{"ACME/A", "acme/b"})
	if want := []string{"x/y", "acme/a", "acme/b"}; !slices.Equal(got, want) {
		t.Errorf("mergeTargets = %v, want %v", got, want)
	}
}

func TestReportsOfSeveralRepositoriesAdd(t *testing.T) {
	a := Report{InstanceID: "i-a", Reviewed: 8, Merged: 7, Retrying: 1, PendingMerge: []int{3}, Cycles: 20, PeakSlots: 2}
	b := Report{InstanceID: "i-b", Reviewed: 1, Merged: 1, Cycles: 5, PeakSlots: 1}
	got := Report{}.add(a).add(b)
	if got.InstanceID != "i-a" || got.Reviewed != 9 || got.Merged != 8 || got.Retrying != 1 || got.Cycles != 25 ||
		got.PeakSlots != 2 || !slices.Equal(got.PendingMerge, []int{3}) {
		t.Errorf("sum = %+v", got)
	}
}
