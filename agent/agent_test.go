package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer answers each "METHOD /path" with a canned status and body and
// records the requests it got as "METHOD /path body" lines.
type fakeServer struct {
	answers map[string]answer

	mu       sync.Mutex // guards requests and auth
	requests []string
	auth     []string
}

type answer struct {
	status int
	body   string
}

func newFake(t *testing.T, answers map[string]answer) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, New(srv.URL, "secret", Options{Transport: srv.Client().Transport})
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.Path
	user, pass, _ := r.BasicAuth()
	f.mu.Lock()
	f.requests = append(f.requests, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(body)))
	f.auth = append(f.auth, user+":"+pass)
	f.mu.Unlock()
	a, ok := f.answers[key]
	if !ok {
		a = answer{http.StatusNotFound, `{"name":"NotFoundError","data":{"message":"no route"}}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (f *fakeServer) got() (requests, auth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...), append([]string(nil), f.auth...)
}

const sid = "ses_dd7113e34ffeSPOTDTMECNXl69"

func TestRequests(t *testing.T) {
	f, c := newFake(t, map[string]answer{
		"POST /session": {200, `{"id":"` + sid + `","slug":"cosmic-nebula","title":"review PR 1","directory":"/w/pr 1",` +
			`"version":"1.18.33","time":{"created":1795983065547,"updated":1795983065547}}`},
		"POST /session/" + sid + "/prompt_async": {204, ""},
		"POST /session/" + sid + "/abort":        {200, "true"},
		"DELETE /session/" + sid:                 {200, "true"},
		"GET /experimental/session": {200, `[{"id":"` + sid + `","title":"review PR 1","directory":"/w/pr 1",` +
			`"time":{"created":1795983065547,"updated":1795983065600},"project":{"id":"global","worktree":"/"}}]`},
		"POST /instance/dispose": {200, "true"},
	})
	ctx := context.Background()
	s, err := c.CreateSession(ctx, "review PR 1", "/w/pr 1")
	if err != nil {
		t.Fatal(err)
	}
	want := Session{ID: sid, Title: "review PR 1", Directory: "/w/pr 1", Created: time.UnixMilli(1795983065547), Updated: time.UnixMilli(1795983065547)}
	if s != want {
		t.Errorf("CreateSession = %+v, want %+v", s, want)
	}
	for _, err := range []error{
		c.PromptAsync(ctx, sid, "ca-pr-self-reviewer", "Review PR #1"),
		c.Abort(ctx, sid),
		c.Delete(ctx, sid),
		c.Dispose(ctx, "/w/pr 1"),
		c.Dispose(ctx, ""), // never the server's own instance: no request
	} {
		if err != nil {
			t.Error(err)
		}
	}
	list, err := c.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != sid || list[0].Directory != "/w/pr 1" || !list[0].Updated.Equal(time.UnixMilli(1795983065600)) {
		t.Errorf("Sessions = %+v", list)
	}
	requests, auth := f.got()
	wantRequests := []string{
		`POST /session?directory=%2Fw%2Fpr+1 {"title":"review PR 1"}`,
		`POST /session/` + sid + `/prompt_async {"agent":"ca-pr-self-reviewer","parts":[{"type":"text","text":"Review PR #1"}]}`,
		`POST /session/` + sid + `/abort`,
		`DELETE /session/` + sid,
		`POST /instance/dispose?directory=%2Fw%2Fpr+1`,
		`GET /experimental/session?limit=100000`,
	}
	if !reflect.DeepEqual(requests, wantRequests) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(requests, "\n"), strings.Join(wantRequests, "\n"))
	}
	for _, a := range auth {
		if a != "opencode:secret" {
			t.Errorf("basic auth %q, want opencode:secret", a)
		}
	}
}

func TestErrors(t *testing.T) {
	msgs := "GET /session/" + sid + "/message"
	tests := []struct {
		name          string
		answers       map[string]answer
		call          func(context.Context, *Client) error
		wantStatus    int
		wantRetryable bool
		wantNotFound  bool
		wantText      string
	}{
		{
			name:          "5xx is retryable",
			answers:       map[string]answer{"GET /session/status": {500, `{"name":"UnknownError","data":{"message":"Unexpected server error.","ref":"err_1"}}`}},
			call:          statuses,
			wantStatus:    500,
			wantRetryable: true,
			wantText:      "agent: statuses: 500 Internal Server Error: Unexpected server error.",
		},
		{
			name:       "malformed JSON is permanent",
			answers:    map[string]answer{"GET /session/status": {200, `{"ses_1": {"type": "busy"`}},
			call:       statuses,
			wantStatus: 200,
			wantText:   "agent: statuses: 200 OK: decode answer: unexpected end of JSON input",
		},
		{
			name:         "404 on a gone session",
			answers:      map[string]answer{msgs: {404, `{"name":"NotFoundError","data":{"message":"Session not found: ` + sid + `"}}`}},
			call:         messages,
			wantStatus:   404,
			wantNotFound: true,
			wantText:     "agent: messages " + sid + ": 404 Not Found: not found: Session not found: " + sid,
		},
		{
			name:       "4xx is permanent",
			answers:    map[string]answer{"POST /session": {400, `{"_tag":"BadRequest"}`}},
			call:       createSession,
			wantStatus: 400,
			wantText:   "agent: create session: 400 Bad Request: BadRequest",
		},
		{
			name:       "401 is permanent",
			answers:    map[string]answer{"GET /permission": {401, `Unauthorized`}},
			call:       permissions,
			wantStatus: 401,
			wantText:   "agent: permissions: 401 Unauthorized: Unauthorized",
		},
		{
			name:          "429 is retryable",
			answers:       map[string]answer{"GET /experimental/session": {429, ``}},
			call:          sessions,
			wantStatus:    429,
			wantRetryable: true,
			wantText:      "agent: sessions: 429 Too Many Requests: empty answer",
		},
		{
			name:     "an id the server cannot route is refused before asking",
			call:     func(ctx context.Context, c *Client) error { return c.Abort(ctx, "nope") },
			wantText: `agent: abort nope: invalid session id "nope"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFake(t, tt.answers)
			err := tt.call(context.Background(), c)
			checkError(t, err, tt.wantStatus, tt.wantRetryable, tt.wantNotFound)
			if err != nil && err.Error() != tt.wantText {
				t.Errorf("error text\n%s\nwant\n%s", err, tt.wantText)
			}
		})
	}
}

func statuses(ctx context.Context, c *Client) error {
	_, err := c.Statuses(ctx, "")
	return err
}

func messages(ctx context.Context, c *Client) error {
	_, err := c.Messages(ctx, sid)
	return err
}

func createSession(ctx context.Context, c *Client) error {
	_, err := c.CreateSession(ctx, "t", "")
	return err
}

func permissions(ctx context.Context, c *Client) error {
	_, err := c.Permissions(ctx, "")
	return err
}

func sessions(ctx context.Context, c *Client) error {
	_, err := c.Sessions(ctx)
	return err
}

func checkError(t *testing.T, err error, status int, retryable, notFound bool) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *agent.Error", err, err)
	}
	if e.Status != status || e.Retryable != retryable || IsRetryable(err) != retryable {
		t.Errorf("status %d retryable %v, want %d %v (%v)", e.Status, e.Retryable, status, retryable, err)
	}
	if errors.Is(err, ErrNotFound) != notFound {
		t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", err, !notFound, notFound)
	}
}

func TestUnreachableServerIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	c := New(srv.URL, "", Options{})
	srv.Close()
	_, err := c.Statuses(context.Background(), "")
	checkError(t, err, 0, true, false)
}

// TestNotSent: a call to a closed port never reached a server; one that
// reached it and got an error answer, or none at all, may have been taken
// in.
func TestNotSent(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	c := New(srv.URL, "", Options{})
	srv.Close()
	if err := c.PromptAsync(context.Background(), sid, "a", "p"); !NotSent(err) {
		t.Errorf("NotSent(%v) = false, want true: the server was down", err)
	}
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close() // the request was read: its answer is lost
	}))
	defer cut.Close()
	if err := New(cut.URL, "", Options{}).PromptAsync(context.Background(), sid, "a", "p"); err == nil || NotSent(err) {
		t.Errorf("NotSent(%v) = true, want false: the server read the call", err)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer failing.Close()
	if err := New(failing.URL, "", Options{}).PromptAsync(context.Background(), sid, "a", "p"); err == nil || NotSent(err) {
		t.Errorf("NotSent(%v) = true, want false: a proxy may have passed it on", err)
	}
}

func TestCancelledCallIsNotRetryable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := New(srv.URL, "", Options{}).Messages(ctx, sid)
	checkError(t, err, 0, false, false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestDeleteGoneSession(t *testing.T) {
	f, c := newFake(t, nil) // every path answers 404
	if err := c.Delete(context.Background(), sid); err != nil {
		t.Errorf("Delete of a gone session: %v", err)
	}
	if requests, _ := f.got(); len(requests) != 1 {
		t.Errorf("requests %q, want one DELETE", requests)
	}
}

func TestStatuses(t *testing.T) {
	f, c := newFake(t, map[string]answer{"GET /session/status": {200,
		`{"ses_a":{"type":"busy"},"ses_b":{"type":"retry","attempt":2,"message":"boom","next":1795983126298}}`}})
	got, err := c.Statuses(context.Background(), "/w/pr-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{
		"ses_a": {Type: "busy"},
		"ses_b": {Type: "retry", Attempt: 2, Message: "boom", Next: time.UnixMilli(1795983126298)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Statuses = %+v, want %+v", got, want)
	}
	if requests, _ := f.got(); !reflect.DeepEqual(requests, []string{"GET /session/status?directory=%2Fw%2Fpr-1"}) {
		t.Errorf("requests %q", requests)
	}
}

func TestPermissionsAndAgents(t *testing.T) {
	f, c := newFake(t, map[string]answer{
		"GET /permission": {200, `[{"id":"per_1","sessionID":"ses_a","permission":"bash","patterns":["askme now"],` +
			`"metadata":{"command":"askme now"},"always":["askme *"],"tool":{"messageID":"msg_1","callID":"call_1"}}]`},
		"GET /agent": {200, `[{"name":"build","mode":"primary","native":true,"options":{},"permission":[]},` +
			`{"name":"ca-pr-self-reviewer","mode":"primary","options":{},"permission":[]}]`},
	})
	perms, err := c.Permissions(context.Background(), "/w/a")
	if err != nil {
		t.Fatal(err)
	}
	wantPerms := []Permission{{ID: "per_1", SessionID: "ses_a", Type: "bash", Patterns: []string{"askme now"}}}
	if !reflect.DeepEqual(perms, wantPerms) {
		t.Errorf("Permissions = %+v, want %+v", perms, wantPerms)
	}
	agents, err := c.Agents(context.Background(), "/w")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"build", "ca-pr-self-reviewer"}; !reflect.DeepEqual(agents, want) {
		t.Errorf("Agents = %q, want %q", agents, want)
	}
	if requests, _ := f.got(); !reflect.DeepEqual(requests, []string{"GET /permission?directory=%2Fw%2Fa", "GET /agent?directory=%2Fw"}) {
		t.Errorf("requests %q", requests)
	}
}

func TestMessages(t *testing.T) {
	_, c := newFake(t, map[string]answer{"GET /session/" + sid + "/message": {200, realMessages}})
	got, err := c.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{ID: "msg_1", Role: "user", Created: time.UnixMilli(1795983065734), Text: "Please say hello"},
		{
			ID: "msg_2", Role: "assistant", Created: time.UnixMilli(1795983066503), Completed: time.UnixMilli(1795983067454),
			Finish: "tool-calls",
			Tools:  []ToolCall{{CallID: "call_1", Tool: "bash", Status: "completed", Output: "hello-42\n"}},
		},
		{
			ID: "msg_3", Role: "assistant", Created: time.UnixMilli(1795983067459), Completed: time.UnixMilli(1795983067538),
			Finish: "stop", Text: "Done: hello-42",
		},
		{
			ID: "msg_4", Role: "assistant", Created: time.UnixMilli(1795983119624), Completed: time.UnixMilli(1795983119741),
			Error: "APIError: bad",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Messages =\n%+v\nwant\n%+v", got, want)
	}
}

// realMessages is abridged from a real GET /session/{id}/message of opencode
// 1.18.33 (ids shortened): a prompt, a step that ran bash, the final answer,
// and a step that failed because the model answered 400.
const realMessages = `[
{"info":{"id":"msg_1","sessionID":"ses_1","role":"user","time":{"created":1795983065734},"summary":{"diffs":[]},
  "agent":"ca-pr-self-reviewer","model":{"providerID":"fake","modelID":"fake-model"}},
 "parts":[{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"Please say hello"}]},
{"info":{"id":"msg_2","sessionID":"ses_1","role":"assistant","time":{"created":1795983066503,"completed":1795983067454},
  "parentID":"msg_1","modelID":"fake-model","providerID":"fake","mode":"ca-pr-self-reviewer","agent":"ca-pr-self-reviewer",
  "path":{"cwd":"/tmp/x","root":"/"},"cost":0,"tokens":{"total":13,"input":10,"output":3,"reasoning":0,"cache":{"read":0,"write":0}},
  "finish":"tool-calls"},
 "parts":[{"id":"prt_2","type":"step-start"},
  {"id":"prt_3","type":"tool","callID":"call_1","tool":"bash","state":{"status":"completed",
   "input":{"command":"echo hello-$((6*7))","description":"say hello"},"output":"hello-42\n","title":"echo hello-$((6*7))",
   "metadata":{"output":"hello-42\n","exit":0,"truncated":false},"time":{"start":1795983067248,"end":1795983067439}}},
  {"id":"prt_4","type":"step-finish","reason":"tool-calls","cost":0,"tokens":{"total":13,"input":10,"output":3,"reasoning":0,"cache":{"read":0,"write":0}}}]},
{"info":{"id":"msg_3","sessionID":"ses_1","role":"assistant","time":{"created":1795983067459,"completed":1795983067538},
  "parentID":"msg_1","modelID":"fake-model","providerID":"fake","mode":"ca-pr-self-reviewer","agent":"ca-pr-self-reviewer",
  "path":{"cwd":"/tmp/x","root":"/"},"cost":0,"tokens":{"total":13,"input":10,"output":3,"reasoning":0,"cache":{"read":0,"write":0}},
  "finish":"stop"},
 "parts":[{"id":"prt_5","type":"step-start"},
  {"id":"prt_6","type":"text","text":"Done: hello-42","time":{"start":1795983067522,"end":1795983067526}},
  {"id":"prt_7","type":"step-finish","reason":"stop","cost":0,"tokens":{"total":13,"input":10,"output":3,"reasoning":0,"cache":{"read":0,"write":0}}}]},
{"info":{"id":"msg_4","sessionID":"ses_1","role":"assistant","time":{"created":1795983119624,"completed":1795983119741},
  "parentID":"msg_1","modelID":"fake-model","providerID":"fake","mode":"ca-pr-self-reviewer","agent":"ca-pr-self-reviewer",
  "path":{"cwd":"/tmp/x","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},
  "error":{"name":"APIError","data":{"message":"bad","statusCode":400,"isRetryable":false,"responseBody":"{}"}}},
 "parts":[]}
]`

func TestFinished(t *testing.T) {
	t0 := time.UnixMilli(1795983065734)
	user := Message{Role: "user", Created: t0, Text: "Review PR #1"}
	step := func(finish string, tools ...ToolCall) Message {
		return Message{Role: "assistant", Created: t0, Completed: t0.Add(time.Second), Finish: finish, Tools: tools}
	}
	answer := step("stop")
	answer.Text = "REVIEW-RESULT: ok"
	streaming := Message{Role: "assistant", Created: t0, Text: "REVIEW-"}
	aborted := step("")
	aborted.Error = "MessageAbortedError: Aborted"
	ran := ToolCall{CallID: "call_1", Tool: "bash", Status: "completed", Output: "hello-42\n"}
	running := ToolCall{CallID: "call_2", Tool: "bash", Status: "running"}
	tests := []struct {
		name     string
		msgs     []Message
		wantDone bool
		wantText string
		wantErr  string
	}{
		{name: "no messages yet", msgs: nil},
		{name: "prompt not yet answered", msgs: []Message{user}},
		{name: "answer still streaming", msgs: []Message{user, streaming}},
		{name: "a step called tools, more to come", msgs: []Message{user, step("tool-calls", ran)}},
		{name: "a tool still runs", msgs: []Message{user, {Role: "assistant", Created: t0, Tools: []ToolCall{running}}}},
		{name: "final answer", msgs: []Message{user, step("tool-calls", ran), answer}, wantDone: true, wantText: "REVIEW-RESULT: ok"},
		{name: "aborted", msgs: []Message{user, aborted}, wantDone: true, wantErr: "MessageAbortedError: Aborted"},
		{name: "stopped without a reason", msgs: []Message{user, step("")}, wantDone: true,
			wantErr: "the assistant stopped without a finish reason"},
		{name: "output cut at the length limit", msgs: []Message{user, step("length")}, wantDone: true,
			wantErr: `the assistant stopped with finish reason "length"`},
		{name: "prompted again after an answer", msgs: []Message{user, answer, user}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, text, errMsg := Finished(tt.msgs)
			if done != tt.wantDone || text != tt.wantText || errMsg != tt.wantErr {
				t.Errorf("Finished = %v, %q, %q; want %v, %q, %q", done, text, errMsg, tt.wantDone, tt.wantText, tt.wantErr)
			}
		})
	}
}
