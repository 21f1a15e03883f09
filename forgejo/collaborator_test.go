package forgejo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestIsCollaborator: a collaborator, a member of the owning organisation,
// the owner itself and a stranger; a forge that fails is an error, never a no.
func TestIsCollaborator(t *testing.T) {
	mux := http.NewServeMux()
	answer := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	mux.HandleFunc("/api/v1/repos/acme/w/collaborators/alice", answer(http.StatusNoContent))
	mux.HandleFunc("/api/v1/repos/acme/w/collaborators/bob", answer(http.StatusNotFound))
	mux.HandleFunc("/api/v1/orgs/acme/members/bob", answer(http.StatusNoContent))
	mux.HandleFunc("/api/v1/repos/acme/w/collaborators/carol", answer(http.StatusNotFound))
	mux.HandleFunc("/api/v1/orgs/acme/members/carol", answer(http.StatusNotFound))
	mux.HandleFunc("/api/v1/repos/acme/w/collaborators/dave", answer(http.StatusInternalServerError))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for account, want := range map[string]bool{"alice": true, "bob": true, "Acme": true, "carol": false} {
		if got, err := c.IsCollaborator(ctx, "acme", "w", account); got != want || err != nil {
			t.Errorf("IsCollaborator(%s) = %v, %v; want %v", account, got, err, want)
		}
	}
	if got, err := c.IsCollaborator(ctx, "acme", "w", "dave"); got || err == nil {
		t.Errorf("IsCollaborator on a failing forge = %v, %v; want an error", got, err)
	}
}
