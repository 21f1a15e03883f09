package bounded

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCapsEveryBody(t *testing.T) {
	const limit = 1000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length: the cap must hold while reading
		}
		_, _ = io.WriteString(w, strings.Repeat("x", n))
	}))
	defer srv.Close()
	hc := Client(nil, limit, 10*time.Second)
	tests := []struct {
		name    string
		query   string
		wantLen int
		wantErr bool
	}{
		{"under the cap", "n=999", 999, false},
		{"exactly the cap", "n=1000", 1000, false},
		{"one byte over, declared", "n=1001", 0, true},
		{"far over, declared", "n=100000", 0, true},
		{"one byte over, streamed", "n=1001&chunked=1", 0, true},
		{"far over, streamed", "n=100000&chunked=1", 0, true},
		{"exactly the cap, streamed", "n=1000&chunked=1", 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := hc.Get(srv.URL + "/?" + tt.query)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			var tl *TooLargeError
			if tt.wantErr {
				if !errors.As(err, &tl) || tl.Limit != limit {
					t.Fatalf("err = %v, want a *TooLargeError with limit %d", err, limit)
				}
				if !strings.Contains(err.Error(), "1000 bytes cap") {
					t.Errorf("error %q does not name the cap", err)
				}
				return
			}
			if err != nil || len(body) != tt.wantLen {
				t.Fatalf("read %d bytes, %v; want %d", len(body), err, tt.wantLen)
			}
		})
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 512 << 10: "512 KiB", 2 << 30: "2 GiB", 1500: "1500 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
