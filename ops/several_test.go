package ops

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"pool/statuspage"
)

func severalSample() statuspage.Status {
	st := sample()
	st.Repo = "2 repositories"
	for i := range st.Slots {
		st.Slots[i].Repo = "acme/widgets"
	}
	for i := range st.PRs {
		st.PRs[i].Repo = "acme/widgets"
	}
	st.PRs = append(st.PRs, statuspage.PR{Repo: "acme/gadgets", Number: 8, State: "unreviewed", Next: "queued for review (next)"})
	st.Repos = []statuspage.RepoFigures{
		{Repo: "acme/gadgets", Open: 1, LastCycle: now.Add(-2 * time.Second)},
		{Repo: "acme/widgets", Busy: 1, Open: 2, Merged: 1, LastCycle: now.Add(-4 * time.Second)},
	}
	return st
}

// TestPageOfSeveralRepositories: the page names each PR's repository, keeps
// the rows of equal numbers apart, and totals the repositories' figures.
func TestPageOfSeveralRepositories(t *testing.T) {
	rec := get(t, (&Server{Status: severalSample}).Handler(), "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d", rec.Code)
	}
	page := rec.Body.String()
	for _, want := range []string{
		"<h2>Repositories</h2>", "<td>acme/gadgets</td><td>0</td><td>1</td><td>0</td><td>2s ago</td>",
		"<tr><th>total</th><th>1</th><th>3</th><th>1</th>",
		`<tr id="pr-acme/widgets-8">`, `<tr id="pr-acme/gadgets-8">`, "acme/widgets#7",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	single := get(t, (&Server{Status: sample}).Handler(), "/").Body.String()
	if strings.Contains(single, "Repositories") || strings.Contains(single, "acme/widgets#") {
		t.Error("the page of one repository shows repositories")
	}
}

func TestWriteTableOfSeveralRepositories(t *testing.T) {
	var b strings.Builder
	if err := WriteTable(&b, severalSample()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"acme/gadgets#8", "REPOSITORIES 2", "acme/widgets  1", "total"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
