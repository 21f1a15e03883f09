package forgejo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// do makes a plain API call and returns the status and body. A transport
// failure is an *Error; an HTTP error status is returned for the caller to
// interpret.
func (c *Client) do(ctx context.Context, op, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, &Error{Op: op, Err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+"/api/v1"+path, rd)
	if err != nil {
		return 0, nil, &Error{Op: op, Err: err}
	}
	req.Header.Set("Authorization", "token "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, newError(op, 0, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, newError(op, 0, err)
	}
	return resp.StatusCode, b, nil
}

// get is do for reads that must answer 200; it returns the body.
func (c *Client) get(ctx context.Context, op, path string) ([]byte, error) {
	status, body, err := c.do(ctx, op, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, newError(op, status, fmt.Errorf("%s", snippet(body)))
	}
	return body, nil
}

// getJSON is get, decoded into out.
func (c *Client) getJSON(ctx context.Context, op, path string, out any) error {
	body, err := c.get(ctx, op, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return malformed(op, err)
	}
	return nil
}

// getPage is get, decoded by one of the list decoders.
func getPage[T any](ctx context.Context, c *Client, op, path string, decode func([]byte) ([]T, error)) ([]T, error) {
	body, err := c.get(ctx, op, path)
	if err != nil {
		return nil, err
	}
	page, err := decode(body)
	if err != nil {
		return nil, malformed(op, err)
	}
	return page, nil
}

// malformed is a 200 answer the pool cannot read: worth reading again later.
func malformed(op string, err error) error {
	return &Error{Op: op, Status: http.StatusOK, Retryable: true, Err: fmt.Errorf("malformed answer: %w", err)}
}

// snippet is the start of an error body, for messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

type apiStatus struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	Context     string `json:"context"`
	TargetURL   string `json:"target_url"`
	Description string `json:"description"`
	Created     string `json:"created_at"`
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}
