package sandbox

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// helloScript runs one command, then reports its output.
func helloScript(prompt string, outputs []string) Turn {
	if len(outputs) == 0 {
		return Turn{Bash: "echo hello-$((6*7))"}
	}
	return Turn{Text: "The command said " + strings.TrimSpace(outputs[0])}
}

const bashTool = `{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}`

// sseChunk is the part of a chat.completion.chunk the test reads.
type sseChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// postChat sends a streaming request and returns its chunks; it fails
// unless the stream ends with [DONE].
func postChat(t *testing.T, m *Model, body string) []sseChunk {
	t.Helper()
	resp, err := http.Post(m.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var chunks []sseChunk
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return chunks
		}
		var c sseChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("sseChunk %s: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	t.Fatalf("stream ended without [DONE]: %v", sc.Err())
	return nil
}

func TestModel(t *testing.T) {
	m, err := StartModel(helloScript)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	first := postChat(t, m, `{"model":"fake-model","stream":true,"tools":[`+bashTool+`],"messages":[`+
		`{"role":"system","content":"You review PRs."},{"role":"user","content":"Review PR #1"}]}`)
	call := first[0].Choices[0].Delta.ToolCalls
	if len(call) != 1 || call[0].Function.Name != "bash" ||
		call[0].Function.Arguments != `{"command":"echo hello-$((6*7))","description":"Scripted command"}` {
		t.Errorf("first turn: tool calls %+v", call)
	}
	if f := first[len(first)-1].Choices[0].FinishReason; f == nil || *f != "tool_calls" {
		t.Errorf("first turn: finish reason %v", f)
	}

	second := postChat(t, m, `{"model":"fake-model","stream":true,"tools":[`+bashTool+`],"messages":[`+
		`{"role":"user","content":[{"type":"text","text":"Review PR #1"}]},`+
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"call_1","content":"hello-42\n"}]}`)
	if got := second[0].Choices[0].Delta.Content; got != "The command said hello-42" {
		t.Errorf("second turn: text %q", got)
	}

	title := postChat(t, m, `{"model":"fake-model","stream":true,"messages":[`+
		`{"role":"system","content":"You are a title generator."},{"role":"user","content":"Review PR #2"}]}`)
	if got := title[0].Choices[0].Delta.Content; got != auxiliaryAnswer {
		t.Errorf("title request: text %q", got)
	}

	if got, want := m.Prompts(), []string{"Review PR #1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Prompts() = %q, want %q", got, want)
	}
	if got := m.Requests(); got != 3 {
		t.Errorf("Requests() = %d, want 3", got)
	}
}

func TestModelSetScript(t *testing.T) {
	m, err := StartModel(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := `{"stream":true,"tools":[` + bashTool + `],"messages":[{"role":"user","content":"hi"}]}`
	if got := postChat(t, m, req)[0].Choices[0].Delta.Content; got != auxiliaryAnswer {
		t.Errorf("without a script: %q", got)
	}
	m.SetScript(func(string, []string) Turn { return Turn{Text: "swapped"} })
	if got := postChat(t, m, req)[0].Choices[0].Delta.Content; got != "swapped" {
		t.Errorf("after SetScript: %q", got)
	}
	resp, err := http.Get(m.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 1 || list.Data[0].ID != ModelID {
		t.Errorf("GET /models: %+v, %v", list, err)
	}
}

// TestModelRoutes: a shared model answers each sandbox's conversations with
// that sandbox's script, by the owner of the repository the prompt names,
// and counts its prompts apart; other prompts get the model's own script.
func TestModelRoutes(t *testing.T) {
	m, err := StartModel(func(string, []string) Turn { return Turn{Text: "default"} })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a := m.Route("alice", func(string, []string) Turn { return Turn{Text: "alice's"} })
	b := m.Route("bob", func(string, []string) Turn { return Turn{Text: "bob's"} })
	b.AddOwner("bobs-org")
	ask := func(prompt string) string {
		msg, _ := json.Marshal(prompt)
		req := `{"stream":true,"tools":[` + bashTool + `],"messages":[{"role":"user","content":` + string(msg) + `}]}`
		return postChat(t, m, req)[0].Choices[0].Delta.Content
	}
	const head = "\nHead SHA: 0123456789abcdef\n"
	for _, c := range []struct{ prompt, want string }{
		{"Review PR #1. Repo: alice/demo." + head, "alice's"},
		{"Review PR #1. Repo: Bob/demo." + head, "bob's"},
		{"Review PR #2. Repo: bobs-org/tool." + head, "bob's"},
		{"Review PR #3. Repo: carol/demo." + head, "default"},
		{"hello", "default"},
	} {
		if got := ask(c.prompt); got != c.want {
			t.Errorf("%q answered %q, want %q", c.prompt, got, c.want)
		}
	}
	if got := len(a.Prompts()); got != 1 {
		t.Errorf("alice's route counted %d prompts, want 1", got)
	}
	if got := len(b.Prompts()); got != 2 {
		t.Errorf("bob's route counted %d prompts, want 2", got)
	}
	if got := len(m.Prompts()); got != 5 {
		t.Errorf("the model counted %d prompts, want 5", got)
	}
	b.SetScript(func(string, []string) Turn { return Turn{Text: "bob's new"} })
	if got := ask("Review PR #4. Repo: bob/demo." + head); got != "bob's new" {
		t.Errorf("after SetScript: %q", got)
	}
}

// TestModelCallsAnyTool: a turn naming a tool is a call of that tool with
// its arguments, as the agent server's other tools (write, read, webfetch)
// are called.
func TestModelCallsAnyTool(t *testing.T) {
	m, err := StartModel(func(string, []string) Turn {
		return Turn{Tool: "write", Args: map[string]any{"filePath": "FIXED.txt", "content": "fixed\n"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	chunks := postChat(t, m, `{"stream": true, "tools": [`+bashTool+`], "messages": [{"role": "user", "content": "fix it"}]}`)
	if len(chunks) == 0 || len(chunks[0].Choices) == 0 || len(chunks[0].Choices[0].Delta.ToolCalls) != 1 {
		t.Fatalf("chunks %+v; want one tool call first", chunks)
	}
	call := chunks[0].Choices[0].Delta.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		t.Fatal(err)
	}
	if call.Function.Name != "write" || args["filePath"] != "FIXED.txt" || args["content"] != "fixed\n" || call.ID == "" {
		t.Errorf("call %+v with %v; want write FIXED.txt", call, args)
	}
	last := chunks[len(chunks)-1].Choices[0].FinishReason
	if last == nil || *last != "tool_calls" {
		t.Errorf("finish reason %v, want tool_calls", last)
	}
}
