package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// The scripted model's names as the agent server's config knows them.
const (
	ModelProvider = "fake"
	ModelID       = "fake-model"
)

// A Turn is what the model says next: a bash command to run, a call of
// another tool, or final text.
type Turn struct {
	Bash string
	Text string
	// Tool calls the agent server's tool of this name (write, webfetch,
	// read, ...) with Args; Bash is then ignored.
	Tool string
	Args map[string]any
}

func (t Turn) call() bool { return t.Bash != "" || t.Tool != "" }

// A Script decides the next turn from the conversation so far: the first user
// prompt text, and the outputs of the bash commands already run, in order.
type Script func(prompt string, toolOutputs []string) Turn

// auxiliaryAnswer is what the model says to requests that are not a review
// conversation (a session title, a summary): they carry no tools.
const auxiliaryAnswer = "Scripted session"

// Model is a scripted OpenAI-compatible chat-completions server on loopback,
// the model behind a test agent server.
type Model struct {
	URL string // base URL, ends in /v1

	srv *httptest.Server

	mu       sync.Mutex // guards the fields below
	script   Script
	prompts  []string
	requests int
	calls    int               // tool calls made, to number their ids
	routes   map[string]*Route // by the owner of the repository a prompt names
}

// A Route is the part of a shared model that answers the conversations about
// one sandbox's repositories: the prompts name a repository of one of its
// owners. Tests that share one model and agent server each get a route, so
// their scripts and the prompts they count never mix.
type Route struct {
	m *Model

	// guarded by m.mu
	script   Script
	prompts  []string
	requests int // chat requests about its repositories, turns of a conversation included
}

// StartModel starts a model that answers as script says.
func StartModel(script Script) (*Model, error) {
	m := &Model{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.chat)
	mux.HandleFunc("GET /v1/models", m.models)
	m.srv = httptest.NewServer(mux) // listens on 127.0.0.1:0
	m.URL = m.srv.URL + "/v1"
	return m, nil
}

// Close stops the server.
func (m *Model) Close() { m.srv.Close() }

// Prompts returns the first user prompt of every conversation the model has
// seen, in arrival order. Auxiliary requests (titles, summaries) are not
// conversations.
func (m *Model) Prompts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prompts...)
}

// Requests returns how many chat-completion requests arrived, auxiliary ones
// included.
func (m *Model) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

// SetScript replaces the script for every later request.
func (m *Model) SetScript(s Script) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = s
}

// Route sends every later conversation about a repository of owner to the
// returned route's script instead of the model's own.
func (m *Model) Route(owner string, script Script) *Route {
	r := &Route{m: m, script: script}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.routes == nil {
		m.routes = map[string]*Route{}
	}
	m.routes[strings.ToLower(owner)] = r
	return r
}

// AddOwner sends the conversations about owner's repositories (an
// organisation the sandbox made) to r too.
func (r *Route) AddOwner(owner string) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.routes[strings.ToLower(owner)] = r
}

// Prompts returns the first user prompt of every conversation routed to r,
// in arrival order.
func (r *Route) Prompts() []string {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return append([]string(nil), r.prompts...)
}

// Requests returns how many chat requests about r's repositories arrived:
// every turn of every conversation, so it grows while a session works.
func (r *Route) Requests() int {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return r.requests
}

// SetScript replaces r's script for every later request.
func (r *Route) SetScript(s Script) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.script = s
}

// routeOf returns the route for the repository a prompt names, or nil.
// Called with m.mu held.
func (m *Model) routeOf(prompt string) *Route {
	_, repo, _, ok := PromptTarget(prompt)
	if !ok {
		return nil
	}
	owner, _, _ := strings.Cut(repo, "/")
	return m.routes[strings.ToLower(owner)]
}

// chatRequest is the part of an OpenAI chat-completion request the model
// reads.
type chatRequest struct {
	Stream   bool              `json:"stream"`
	Messages []chatMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or a list of parts
}

// text returns the message's content as plain text, whether it came as a
// string or as a list of parts.
func (c chatMessage) text() string {
	var s string
	if json.Unmarshal(c.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// conversation reads the first user prompt and the tool outputs so far. fresh
// says no assistant or tool message is in it yet.
func (r chatRequest) conversation() (prompt string, outputs []string, fresh bool) {
	fresh = true
	for _, msg := range r.Messages {
		switch msg.Role {
		case "user":
			if prompt == "" {
				prompt = msg.text()
			}
		case "tool":
			outputs = append(outputs, msg.text())
			fresh = false
		case "assistant":
			fresh = false
		}
	}
	return prompt, outputs, fresh
}

func (m *Model) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	turn, callID := m.next(req)
	if !req.Stream {
		writeModelJSON(w, chatCompletion(turn, callID))
		return
	}
	streamTurn(w, turn, callID)
}

// next records the request and asks the script for the next turn. The
// script runs outside the lock: it may be slow, or read Prompts.
func (m *Model) next(req chatRequest) (Turn, string) {
	prompt, outputs, fresh := req.conversation()
	auxiliary := len(req.Tools) == 0 // the agent's own conversations always offer tools
	m.mu.Lock()
	m.requests++
	route := m.routeOf(prompt)
	if route != nil {
		route.requests++
	}
	if fresh && !auxiliary {
		m.prompts = append(m.prompts, prompt)
		if route != nil {
			route.prompts = append(route.prompts, prompt)
		}
	}
	script := m.script
	if route != nil {
		script = route.script
	}
	m.mu.Unlock()

	if auxiliary || script == nil {
		return Turn{Text: auxiliaryAnswer}, ""
	}
	turn := script(prompt, outputs)
	if !turn.call() {
		return turn, ""
	}
	m.mu.Lock()
	m.calls++
	callID := fmt.Sprintf("call_%d", m.calls)
	m.mu.Unlock()
	return turn, callID
}

func (m *Model) models(w http.ResponseWriter, _ *http.Request) {
	writeModelJSON(w, map[string]any{
		"object": "list",
		"data":   []any{map[string]any{"id": ModelID, "object": "model", "created": 0, "owned_by": "sandbox"}},
	})
}

// toolCall is the OpenAI shape of one tool call: bash, or turn.Tool.
func toolCall(turn Turn, callID string) map[string]any {
	name, args := "bash", map[string]any{"command": turn.Bash, "description": "Scripted command"}
	if turn.Tool != "" {
		name, args = turn.Tool, turn.Args
	}
	b, _ := json.Marshal(args)
	return map[string]any{
		"index": 0, "id": callID, "type": "function",
		"function": map[string]any{"name": name, "arguments": string(b)},
	}
}

// turnDelta is the assistant's whole turn as one message or stream delta, and
// the reason it finished.
func turnDelta(turn Turn, callID string) (map[string]any, string) {
	if callID != "" {
		return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{toolCall(turn, callID)}}, "tool_calls"
	}
	return map[string]any{"role": "assistant", "content": turn.Text}, "stop"
}

var chatUsage = map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

// chatCompletion is the non-streaming answer.
func chatCompletion(turn Turn, callID string) map[string]any {
	msg, finish := turnDelta(turn, callID)
	return map[string]any{
		"id": "chatcmpl-sandbox", "object": "chat.completion", "created": time.Now().Unix(), "model": ModelID,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   chatUsage,
	}
}

// streamTurn answers as server-sent events: the turn in one chunk, then a
// chunk with the finish reason and usage, then [DONE].
func streamTurn(w http.ResponseWriter, turn Turn, callID string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	msg, finish := turnDelta(turn, callID)
	chunk := func(choice map[string]any, extra map[string]any) map[string]any {
		c := map[string]any{
			"id": "chatcmpl-sandbox", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": ModelID,
			"choices": []any{choice},
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	writeSSE(w, chunk(map[string]any{"index": 0, "delta": msg, "finish_reason": nil}, nil))
	writeSSE(w, chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}, map[string]any{"usage": chatUsage}))
	fmt.Fprint(w, "data: [DONE]\n\n")
	flushSSE(w)
}

func writeSSE(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", b)
	flushSSE(w)
}

func flushSSE(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeModelJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
