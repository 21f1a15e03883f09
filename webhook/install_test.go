package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pool/forgejo"
)

// fakeHooks is the forge's hook API for one repository; it records calls as
// plain strings.
type fakeHooks struct {
	hooks  map[int64]forgejo.NewHook
	nextID int64
	fail   string // fail calls starting with this
	calls  []string
}

func (f *fakeHooks) call(s string) error {
	f.calls = append(f.calls, s)
	if f.fail != "" && strings.HasPrefix(s, f.fail) {
		return errors.New("boom")
	}
	return nil
}

func (f *fakeHooks) Hooks(_ context.Context, owner, repo string) ([]forgejo.Hook, error) {
	if err := f.call("list " + owner + "/" + repo); err != nil {
		return nil, err
	}
	var out []forgejo.Hook
	for _, id := range slices.Sorted(maps.Keys(f.hooks)) {
		out = append(out, forgejo.Hook{ID: id, URL: f.hooks[id].URL})
	}
	return out, nil
}

func (f *fakeHooks) CreateHook(_ context.Context, owner, repo string, h forgejo.NewHook) error {
	if err := f.call("create " + h.URL); err != nil {
		return err
	}
	f.nextID++
	f.hooks[f.nextID] = h
	return nil
}

func (f *fakeHooks) DeleteHook(_ context.Context, owner, repo string, id int64) error {
	if err := f.call(fmt.Sprintf("delete %d", id)); err != nil {
		return err
	}
	delete(f.hooks, id)
	return nil
}

func (f *fakeHooks) urls() []string {
	var urls []string
	for _, id := range slices.Sorted(maps.Keys(f.hooks)) {
		urls = append(urls, fmt.Sprintf("%d %s", id, f.hooks[id].URL))
	}
	return urls
}

func TestInstallReplacesHookAtSameURL(t *testing.T) {
	f := &fakeHooks{hooks: map[int64]forgejo.NewHook{}}
	ctx := context.Background()
	install := func(url, secret string) {
		t.Helper()
		if err := Install(ctx, f, "owner", "demo", url, []byte(secret)); err != nil {
			t.Fatal(err)
		}
	}
	install("http://127.0.0.1:1/a", "one")
	install("http://127.0.0.1:1/b", "two")
	install("http://127.0.0.1:1/a", "three")
	want := []string{"2 http://127.0.0.1:1/b", "3 http://127.0.0.1:1/a"}
	if got := f.urls(); !slices.Equal(got, want) {
		t.Errorf("hooks %q, want %q", got, want)
	}
	if got := f.hooks[3]; got.Secret != "three" || !slices.Contains(got.Events, "pull_request") {
		t.Errorf("hook 3 = %+v, want the latest secret and the PR events", got)
	}
	// created before the old one is deleted: no event lost in between
	wantCalls := "[list owner/demo create http://127.0.0.1:1/a list owner/demo create http://127.0.0.1:1/b list owner/demo create http://127.0.0.1:1/a delete 1]"
	if fmt.Sprint(f.calls) != wantCalls {
		t.Errorf("calls %v,\nwant %s", f.calls, wantCalls)
	}
}

func TestInstallErrors(t *testing.T) {
	tests := []struct {
		name, fail, secret string
		want               string
	}{
		{"list fails", "list", "s", "webhook: install on owner/demo: boom"},
		{"create fails", "create", "s", "webhook: install on owner/demo: boom"},
		{"delete fails", "delete", "s", "webhook: install on owner/demo: replaced hook 1: boom"},
		{"empty secret", "", "", "webhook: install on owner/demo: empty secret"},
		{"secret not UTF-8", "", "\xff", "webhook: install on owner/demo: secret is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHooks{hooks: map[int64]forgejo.NewHook{1: {URL: "http://127.0.0.1:1/"}}, nextID: 1, fail: tt.fail}
			err := Install(context.Background(), f, "owner", "demo", "http://127.0.0.1:1/", []byte(tt.secret))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestInstallOrgInstallsOnTheOrganisation(t *testing.T) {
	f := &fakeHooks{hooks: map[int64]forgejo.NewHook{}}
	if err := InstallOrg(context.Background(), f, "acme", "http://127.0.0.1:1/a", []byte("s")); err != nil {
		t.Fatal(err)
	}
	if want := "[list acme/ create http://127.0.0.1:1/a]"; fmt.Sprint(f.calls) != want {
		t.Errorf("calls %v, want %s", f.calls, want)
	}
	f.fail = "list"
	err := InstallOrg(context.Background(), f, "acme", "http://127.0.0.1:1/a", []byte("s"))
	if err == nil || err.Error() != "webhook: install on organisation acme: boom" {
		t.Errorf("error %v", err)
	}
}
