package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"pool/internal/redact"
)

// answer is what the forge answered to one plain call.
type answer struct {
	status int
	body   []byte
	header http.Header
}

// send makes a plain API call and reads the whole answer, within the
// client's body cap and timeout. A transport failure (an answer over the cap
// included), and a 429 or 503 asking to retry after a while, is an *Error;
// any other HTTP error status is returned for the caller to interpret.
func (c *Client) send(ctx context.Context, op, method, path string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, &Error{Op: op, Err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+"/api/v1"+path, rd)
	if err != nil {
		return answer{}, &Error{Op: op, Err: err}
	}
	req.Header.Set("Authorization", "token "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, newError(op, 0, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, newError(op, 0, err)
	}
	a := answer{status: resp.StatusCode, body: b, header: resp.Header}
	if wait := retryAfter(a.status, a.header, time.Now()); wait > 0 {
		// a proxy in front of the forge is shedding load: no answer to read
		return a, withRetryAfter(newError(op, a.status, fmt.Errorf("%s", snippet(b))), wait)
	}
	return a, nil
}

// do is send for callers that need only the status and the body.
func (c *Client) do(ctx context.Context, op, method, path string, body any) (int, []byte, error) {
	a, err := c.send(ctx, op, method, path, body)
	return a.status, a.body, err
}

// getJSON is do for reads that must answer 200 with JSON.
func (c *Client) getJSON(ctx context.Context, op, path string, out any) error {
	status, body, err := c.do(ctx, op, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return newError(op, status, fmt.Errorf("%s", snippet(body)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return Malformed(op, err)
	}
	return nil
}

// snippet is the start of an error body, for messages.
func snippet(b []byte) string {
	return redact.Clip(string(bytes.TrimSpace(b)), 300)
}

type apiStatus struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	Context     string `json:"context"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
	Created     string `json:"created_at"`
}

func (s *apiStatus) check() error {
	switch {
	case s.ID <= 0:
		return fmt.Errorf("status without an id")
	case s.Status == "":
		return fmt.Errorf("status %d without a state", s.ID)
	}
	return nil
}
