package sandbox

import (
	"context"
	"testing"
)

// TestStartServersFailsWithAnError: a start that fails part-way (here at
// once, its context already cancelled) returns the error and stops what it
// started; it does not panic on the half-built servers.
func TestStartServersFailsWithAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := StartServers(ctx, t.TempDir(), "", nil)
	if err == nil {
		s.Stop()
		t.Fatal("StartServers with a cancelled context: no error")
	}
	if s != nil {
		t.Errorf("StartServers failed (%v) but returned servers", err)
	}
}
