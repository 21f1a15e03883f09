package pool

import (
	"slices"
	"testing"
)

// TestTheUpdateHolderIsReadFirst: the due entries keep their order, oldest
// first, except the base's update holder, which every other behind PR waits
// for: it comes first, so a turn that ends at the first mergeable entry
// reaches it however long the others take to decide.
func TestTheUpdateHolderIsReadFirst(t *testing.T) {
	entries := func(ns ...int) []queued {
		var out []queued
		for _, n := range ns {
			out = append(out, queued{n: n})
		}
		return out
	}
	numbers := func(qs []queued) []int {
		var out []int
		for _, q := range qs {
			out = append(out, q.n)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		due    []int
		holder int
		want   []int
	}{
		{"the holder behind the waiting ones", []int{2, 4, 6, 3}, 3, []int{3, 2, 4, 6}},
		{"the holder in the middle", []int{2, 3, 4}, 3, []int{3, 2, 4}},
		{"the holder first already", []int{3, 2}, 3, []int{3, 2}},
		{"no holder", []int{2, 4}, 0, []int{2, 4}},
		{"the holder not due", []int{2, 4}, 5, []int{2, 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := numbers(holderFirst(entries(tt.due...), tt.holder)); !slices.Equal(got, tt.want) {
				t.Errorf("holderFirst(%v, %d) = %v, want %v", tt.due, tt.holder, got, tt.want)
			}
		})
	}
}
