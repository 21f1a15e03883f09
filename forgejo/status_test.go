package forgejo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"pool/forge"
)

func TestPostStatus(t *testing.T) {
	var got map[string]string
	var path, auth string
	answer := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.Method+" "+r.URL.Path, r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		w.WriteHeader(answer)
		w.Write([]byte(`{"message":"nope"}`))
	}))
	defer srv.Close()
	c, err := New(context.Background(), srv.URL, "tok", Options{Transport: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	err = c.PostStatus(context.Background(), "o", "r", "abc123", NewStatus{Context: "pool", State: "pending",
		Description: "queued for review (next)", TargetURL: "https://pool.example/#pr-3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"context": "pool", "state": "pending", "description": "queued for review (next)", "target_url": "https://pool.example/#pr-3"}
	if path != "POST /api/v1/repos/o/r/statuses/abc123" || auth != "token tok" || len(got) != len(want) {
		t.Errorf("request %s auth %q body %v", path, auth, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	answer = http.StatusForbidden
	if err := c.PostStatus(context.Background(), "o", "r", "abc123", NewStatus{Context: "pool", State: "pending"}); err == nil || IsRetryable(err) {
		t.Errorf("403 answered %v, want a permanent error", err)
	}
}

func TestWithoutContext(t *testing.T) {
	in := []forge.Status{{Context: "ci/test"}, {Context: "Pool"}, {Context: "pool/extra"}}
	out := WithoutContext(in, "pool")
	if len(out) != 2 || out[0].Context != "ci/test" || out[1].Context != "pool/extra" {
		t.Errorf("WithoutContext = %+v", out)
	}
	if len(WithoutContext(in, "")) != 3 {
		t.Error("an empty context dropped statuses")
	}
}
