package agent

import (
	"fmt"
	"strings"
	"time"
)

// Finish reasons of an assistant message, as the server reports them.
const (
	FinishStop      = "stop"       // the final answer
	FinishToolCalls = "tool-calls" // the model called tools; another message follows
)

// Message is one message of a session. An assistant message is one model
// step: while the agent works, each step that called tools ends with Finish
// "tool-calls" and is followed by the next step's message.
type Message struct {
	ID                 string
	Role               string // "user" or "assistant"
	Created, Completed time.Time
	Finish             string // assistant only: "stop", "tool-calls", "length", ...; "" when aborted or failed
	Error              string // assistant only: "Name: message", e.g. "APIError: bad request"
	Text               string // the text parts, joined by newlines
	Tools              []ToolCall
}

// ToolCall is a tool part of an assistant message.
type ToolCall struct {
	CallID string
	Tool   string // e.g. "bash"
	Status string // "pending", "running", "completed" or "error"
	Output string // when completed
	Error  string // when failed
}

// Pending reports whether the call has not finished yet. A running bash call
// may also be waiting on a permission ask.
func (t ToolCall) Pending() bool { return t.Status == "pending" || t.Status == "running" }

// Finished reports whether the session's work is over, judged by its
// messages: the last message is an assistant message that has completed and
// does not wait for tool calls to continue. text is that message's text.
// errMsg is non-empty when the work ended badly: the message carries an
// error (the model failed, or the session was aborted), or it finished for a
// reason other than "stop" (e.g. "length", or none after an abort during a
// retry).
//
// A last step that ended with "tool-calls" is not finished, even if the
// session is idle: the server was stopped between steps (for example by an
// abort) and no answer will come without a new prompt.
func Finished(msgs []Message) (done bool, text, errMsg string) {
	if len(msgs) == 0 {
		return false, "", ""
	}
	last := msgs[len(msgs)-1]
	if last.Role != "assistant" || last.Completed.IsZero() {
		return false, "", ""
	}
	if last.Error != "" {
		return true, last.Text, last.Error
	}
	if last.Finish == FinishToolCalls || last.pendingTools() {
		return false, "", ""
	}
	switch last.Finish {
	case FinishStop:
		return true, last.Text, ""
	case "":
		return true, last.Text, "the assistant stopped without a finish reason"
	default:
		return true, last.Text, fmt.Sprintf("the assistant stopped with finish reason %q", last.Finish)
	}
}

func (m Message) pendingTools() bool {
	for _, t := range m.Tools {
		if t.Pending() {
			return true
		}
	}
	return false
}

// message converts the server's shape.
func (m messageJSON) message() Message {
	msg := Message{
		ID:        m.Info.ID,
		Role:      m.Info.Role,
		Created:   millis(m.Info.Time.Created),
		Completed: millis(m.Info.Time.Completed),
		Finish:    m.Info.Finish,
	}
	if e := m.Info.Error; e != nil {
		msg.Error = e.text()
	}
	var texts []string
	for _, p := range m.Parts {
		switch {
		case p.Type == "text" && !p.Ignored && p.Text != "":
			texts = append(texts, p.Text)
		case p.Type == "tool":
			msg.Tools = append(msg.Tools, ToolCall{
				CallID: p.CallID, Tool: p.Tool,
				Status: p.State.Status, Output: p.State.Output, Error: p.State.Error,
			})
		}
	}
	msg.Text = strings.Join(texts, "\n")
	return msg
}

func (e *messageErrorJSON) text() string {
	switch {
	case e.Name != "" && e.Data.Message != "":
		return e.Name + ": " + e.Data.Message
	case e.Name != "":
		return e.Name
	case e.Data.Message != "":
		return e.Data.Message
	}
	return "unknown error"
}
