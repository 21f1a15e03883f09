package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// greetScript runs a command that reads the server's extra environment, then
// reports what it printed.
func greetScript(prompt string, outputs []string) Turn {
	if len(outputs) == 0 {
		return Turn{Bash: "echo $SANDBOX_TEST_GREETING-$((6*7))"}
	}
	return Turn{Text: "The command said " + strings.TrimSpace(outputs[0])}
}

func TestAgentServer(t *testing.T) {
	if testing.Short() {
		t.Skip("sandbox: starting a real opencode server is skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), EndToEndLimit)
	defer cancel()
	m, err := StartModel(greetScript)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := t.TempDir()
	a, err := StartAgentServer(ctx, dir, AgentOptions{
		ModelURL: m.URL, AgentName: "ca-pr-self-reviewer", Password: "pw",
		Env: map[string]string{"SANDBOX_TEST_GREETING": "hi"}, Log: TestLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("opencode log tail:\n%s", a.LogTail())
		}
		_ = a.Stop()
	}()

	if status := agentCall(ctx, t, a, "", http.MethodGet, "/session/status", nil, nil); status != http.StatusUnauthorized {
		t.Errorf("without the password: %d, want 401", status)
	}
	var s struct{ ID string }
	agentCall(ctx, t, a, "pw", http.MethodPost, "/session", map[string]string{"title": "t"}, &s)
	agentCall(ctx, t, a, "pw", http.MethodPost, "/session/"+s.ID+"/prompt_async", map[string]any{
		"agent": "ca-pr-self-reviewer", "parts": []any{map[string]string{"type": "text", "text": "Say hi"}},
	}, nil)
	if got, want := waitForAnswer(ctx, t, a, s.ID), "The command said hi-42"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if got := m.Prompts(); len(got) != 1 || got[0] != "Say hi" {
		t.Errorf("model prompts %q, want [\"Say hi\"]", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "home", ".npm")); err == nil {
		t.Errorf("the server ran npm: seedConfigDir no longer keeps it from installing its plugin package")
	}
	checkAgentStop(t, a)
}

// agentCall sends one request with the password (if any) and decodes a 2xx
// answer into out. It returns the status.
func agentCall(ctx context.Context, t *testing.T, a *AgentServer, password, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if password != "" {
		req.SetBasicAuth(agentUser, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// waitForAnswer polls the session's messages until an assistant message
// finishes with "stop", and returns its text.
func waitForAnswer(ctx context.Context, t *testing.T, a *AgentServer, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, EndToEndLimit)
	defer cancel()
	for {
		var msgs []struct {
			Info struct {
				Role, Finish string
				Error        any
			}
			Parts []struct{ Type, Text string }
		}
		agentCall(ctx, t, a, "pw", http.MethodGet, "/session/"+id+"/message", nil, &msgs)
		for _, msg := range msgs {
			if msg.Info.Error != nil {
				t.Fatalf("assistant error: %v", msg.Info.Error)
			}
			if msg.Info.Role == "assistant" && msg.Info.Finish == "stop" {
				return textOf(msg.Parts)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no answer: %v (messages %+v)", ctx.Err(), msgs)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func textOf(parts []struct{ Type, Text string }) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func checkAgentStop(t *testing.T, a *AgentServer) {
	t.Helper()
	if err := a.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := a.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if a.cmd.ProcessState == nil {
		t.Errorf("the server process was not reaped")
	}
	if resp, err := http.Get(a.URL + "/session/status"); err == nil {
		resp.Body.Close()
		t.Errorf("the server still answers after Stop: %s", resp.Status)
	}
}
