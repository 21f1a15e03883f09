package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOpenToAnyone: a server that answers a request without credentials is
// open; one that answers 401 asks for a password; anything else is an
// error, never taken for either.
func TestOpenToAnyone(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		want    bool
		wantErr bool
	}{
		{"no password", http.StatusOK, true, false},
		{"password asked", http.StatusUnauthorized, false, false},
		{"server error", http.StatusInternalServerError, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, _, ok := r.BasicAuth(); ok {
					t.Errorf("the probe carried credentials")
				}
				w.WriteHeader(tt.status)
				w.Write([]byte("[]"))
			}))
			defer srv.Close()
			got, err := New(srv.URL, "pw", Options{}).OpenToAnyone(context.Background())
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("OpenToAnyone = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
