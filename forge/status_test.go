package forge

import (
	"reflect"
	"testing"
)

func TestNewestPerContext(t *testing.T) {
	history := []Status{
		{ID: 3, Context: "ci", State: "success"},
		{ID: 1, Context: "lint", State: "pending"},
		{ID: 2, Context: "ci", State: "failure"},
		{ID: 4, Context: "lint", State: "failure"},
		{ID: 5, Context: "CI", State: "pending"},
	}
	want := []Status{
		{ID: 3, Context: "ci", State: "success"},
		{ID: 4, Context: "lint", State: "failure"},
		{ID: 5, Context: "CI", State: "pending"},
	}
	if got := NewestPerContext(history); !reflect.DeepEqual(got, want) {
		t.Errorf("NewestPerContext = %+v, want %+v", got, want)
	}
	if got := NewestPerContext(nil); len(got) != 0 {
		t.Errorf("no history: %+v", got)
	}
}
