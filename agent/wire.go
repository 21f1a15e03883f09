package agent

import "time"

// The server's JSON shapes (opencode 1.x, checked against its GET /doc), kept
// to the fields the pool reads.

type sessionJSON struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	Time      struct {
		Created float64 `json:"created"`
		Updated float64 `json:"updated"`
	} `json:"time"`
}

func (s sessionJSON) session() Session {
	return Session{ID: s.ID, Title: s.Title, Directory: s.Directory, Created: millis(s.Time.Created), Updated: millis(s.Time.Updated)}
}

type statusJSON struct {
	Type    string  `json:"type"`
	Attempt int     `json:"attempt"`
	Message string  `json:"message"`
	Next    float64 `json:"next"`
}

func (s statusJSON) status() Status {
	return Status{Type: s.Type, Attempt: s.Attempt, Message: s.Message, Next: millis(s.Next)}
}

type promptJSON struct {
	Agent string         `json:"agent,omitempty"`
	Parts []textPartJSON `json:"parts"`
}

// noReplyJSON is a user message the server stores without answering it.
type noReplyJSON struct {
	NoReply bool           `json:"noReply"`
	Parts   []textPartJSON `json:"parts"`
}

type textPartJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// messageJSON is one entry of GET /session/{id}/message.
type messageJSON struct {
	Info struct {
		ID   string `json:"id"`
		Role string `json:"role"`
		Time struct {
			Created   float64 `json:"created"`
			Completed float64 `json:"completed"`
		} `json:"time"`
		Finish string            `json:"finish"`
		Error  *messageErrorJSON `json:"error"`
	} `json:"info"`
	Parts []partJSON `json:"parts"`
}

// messageErrorJSON is an assistant message's error: APIError,
// MessageAbortedError, ProviderAuthError, UnknownError, ...
type messageErrorJSON struct {
	Name string `json:"name"`
	Data struct {
		Message string `json:"message"`
	} `json:"data"`
}

// partJSON holds the fields of the part types the pool reads: "text" and
// "tool". Others (step-start, step-finish, reasoning, ...) are skipped.
type partJSON struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Ignored bool   `json:"ignored"`
	CallID  string `json:"callID"`
	Tool    string `json:"tool"`
	State   struct {
		Status string `json:"status"`
		Output string `json:"output"`
		Error  string `json:"error"`
	} `json:"state"`
}

type permissionJSON struct {
	ID         string   `json:"id"`
	SessionID  string   `json:"sessionID"`
	Permission string   `json:"permission"`
	Patterns   []string `json:"patterns"`
}

// millis converts the server's milliseconds since the epoch; 0 is the zero
// time.
func millis(ms float64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}
