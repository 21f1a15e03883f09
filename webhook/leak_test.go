package webhook

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any leaves a goroutine running. A
// waker's goroutine lives on for one wake interval after its last wake, by
// design, so the check allows three intervals for goroutines to end.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 {
		os.Exit(code)
	}
	deadline := time.Now().Add(3 * minWakeInterval)
	for {
		err := goleak.Find()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			os.Exit(1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
