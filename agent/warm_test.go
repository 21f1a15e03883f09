package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pool/agent"
	"pool/internal/sandbox"
)

// serverLog returns a reader of the server's log: each call returns what
// the server logged since the last one.
func serverLog(t *testing.T, srv *sandbox.AgentServer) func() string {
	path, read := filepath.Join(srv.Dir, "opencode.log"), 0
	return func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := string(b[read:])
		read = len(b)
		return out
	}
}

// started are the starts the server logged for dir: its instance, its
// location services (tools, project copy) and a snapshot repository (the
// log's line for it names no directory: one directory at a time here).
func started(log, dir string) []string {
	var out []string
	for _, s := range []struct{ name, line string }{
		{"instance", `message="creating instance" directory=` + dir + "\n"},
		{"location services", `message="booting location services" directory=` + dir + " "},
		{"snapshot", "message=initialized\n"},
	} {
		if strings.Contains(log, s.line) {
			out = append(out, s.name)
		}
	}
	return out
}

var allStarts = []string{"instance", "location services", "snapshot"}

// TestWarmStartsWhatAFirstSessionWould: on the real agent server, the
// first session in a directory starts the server's instance there, its
// location services and its snapshot (its log says so). Warm starts all
// three without asking the model and leaves no session; the first
// session in a warmed directory then starts none of them.
func TestWarmStartsWhatAFirstSessionWould(t *testing.T) {
	c, model, srv := startServerOf(t, helloScript, nil)
	ctx, cancel := context.WithTimeout(context.Background(), sandbox.EndToEndLimit)
	defer cancel()
	logged := serverLog(t, srv)
	cold, _ := gitRepo(t)
	warm, _ := gitRepo(t)

	logged()
	runReview(ctx, t, c, "1", cold)
	if got := started(logged(), cold); !slices.Equal(got, allStarts) {
		t.Fatalf("a cold directory's first session started %v, want %v: the log no longer says what it starts", got, allStarts)
	}

	asked := model.Requests()
	began := time.Now()
	if err := c.Warm(ctx, warm); err != nil {
		t.Fatal(err)
	}
	t.Logf("Warm took %s", time.Since(began))
	if n := model.Requests() - asked; n != 0 {
		t.Errorf("Warm asked the model %d times, want never", n)
	}
	var text string
	var warming []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// the log is copied from the server's output: let it catch up
		text += logged()
		if warming = started(text, warm); len(warming) == len(allStarts) {
			break
		}
	}
	if !slices.Equal(warming, allStarts) {
		t.Errorf("Warm started %v, want %v", warming, allStarts)
	}
	sessions, err := c.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(sessions, func(s agent.Session) bool { return s.Directory == warm }); i >= 0 {
		t.Errorf("Warm left session %+v", sessions[i])
	}

	runReview(ctx, t, c, "2", warm)
	if got := started(logged(), warm); len(got) > 0 {
		t.Errorf("the first session in a warmed directory started %v, want nothing", got)
	}
}
