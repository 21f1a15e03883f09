package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"pool/internal/redact"
	"pool/internal/retry"
)

// ErrNotFound says the session is gone (the server answered 404).
var ErrNotFound = errors.New("not found")

// Error is a failed call to the agent server. Retryable says whether trying
// again later may help: true when the server could not be reached or answered
// 5xx, 408 or 429; false for other 4xx answers, answers we cannot read, and
// calls cut short by their context.
type Error struct {
	Op        string // what was being done, e.g. "messages ses_123"
	Status    int    // HTTP status; 0 when there was no answer
	Retryable bool
	Err       error
}

// maxErrorText bounds what an error quotes of the server's answer.
const maxErrorText = 500

// Error never shows a URL's user info, and quotes at most 500 bytes of what
// the server said.
func (e *Error) Error() string {
	msg := redact.Clip(e.Err.Error(), maxErrorText)
	if e.Status != 0 {
		return redact.Text(fmt.Sprintf("agent: %s: %d %s: %s", e.Op, e.Status, http.StatusText(e.Status), msg))
	}
	return redact.Text(fmt.Sprintf("agent: %s: %s", e.Op, msg))
}

func (e *Error) Unwrap() error { return e.Err }

// RetryLater says whether trying the call again later may help (retry.Later).
func (e *Error) RetryLater() bool { return e.Retryable }

// IsRetryable reports whether err is worth retrying later: the one rule,
// retry.Later.
func IsRetryable(err error) bool { return retry.Later(err) }

// NotSent reports whether err says the call never reached the server: no
// connection could be made (refused, no route). Then a write made nothing,
// and nothing on the server needs looking for. Any other failure may have
// come after the server took the call in.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// statusError classifies a non-2xx answer.
func statusError(op string, status int, body []byte) *Error {
	msg := errorMessage(body)
	err := errors.New(msg)
	if status == http.StatusNotFound {
		err = fmt.Errorf("%w: %s", ErrNotFound, msg)
	}
	retryable := status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout
	return &Error{Op: op, Status: status, Retryable: retryable, Err: err}
}

// errorMessage reads the server's error body: {"name", "data": {"message"}}
// for its own errors, {"_tag": ...} for some rejected requests, else text.
func errorMessage(body []byte) string {
	var e struct {
		Name string `json:"name"`
		Tag  string `json:"_tag"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &e) == nil {
		switch {
		case e.Data.Message != "":
			return e.Data.Message
		case e.Name != "":
			return e.Name
		case e.Tag != "":
			return e.Tag
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "empty answer"
	}
	return s
}
