// Package webhook receives Forgejo/Gitea webhook deliveries for one
// repository, verifies their signature and wakes the discovery loop for the
// pull request they concern. It also registers the hook on the forge.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"pool/internal/redact"
)

// maxBody bounds a delivery. Gitea's pull request payloads, with the
// repository and users inlined, are a few kilobytes.
const maxBody = 1 << 20

// maxLoggedHeaders bounds what a rejected request puts in the log of its
// headers: anyone can send them.
const maxLoggedHeaders = 200

// Wake is called with the PR number a verified event concerns (0 when the
// event names no PR, e.g. a commit status, worth a full look).
//
// The handler never calls wake on a request's goroutine: wakes are handed to
// one goroutine, which calls wake at most once a second, so a slow wake
// delays later wakes but never a delivery, and a flood of deliveries costs at
// most one discovery cycle a second. Wakes that pile up meanwhile are merged:
// several PRs into one wake(0).
type Wake func(pr int)

// Handler verifies each delivery's HMAC-SHA256 signature against secret and
// calls wake for the events of owner/repo that concern pull requests. It
// answers 204 when it woke, 202 for a verified delivery it ignores, 200 for
// a delivery id it has seen in the last 10 minutes (ignored), 401 for an
// unsigned or wrongly signed one (logged with at most 200 bytes of its
// headers; these and oversized ones at most once a second, with the count
// rejected since the last line logged), 405 for anything but POST, 413
// for a body over 1 MiB and 400 for a body that is not JSON. With an empty
// secret it rejects every delivery: anyone can sign with an empty key.
func Handler(secret []byte, owner, repo string, log *slog.Logger, wake Wake) http.Handler {
	return newSingle(secret, owner+"/"+repo, log, wake)
}

// newSingle is Handler, with its one waker at hand.
func newSingle(secret []byte, repo string, log *slog.Logger, wake Wake) *handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "webhook")
	w := newWaker(wake, log)
	return &handler{secret: secret, log: log, seen: newDeliveries(), now: time.Now, single: w,
		wakers: func(r string) (*waker, bool) { return w, strings.EqualFold(r, repo) }}
}

type handler struct {
	secret []byte
	log    *slog.Logger
	// wakers gives the waker of each repository served ("owner/name",
	// compared case-insensitively), or false.
	wakers func(repo string) (*waker, bool)
	single *waker // Handler's one waker; nil for a Router
	seen   *deliveries
	now    func() time.Time
	// rejected counts the requests refused before their body was trusted
	// (unsigned, wrongly signed, oversized), logged at most once a second.
	rejected rejects
}

// Router is Handler for several repositories behind one endpoint: a
// delivery for a repository wakeFor serves (its "owner/name", as the
// delivery spells it) wakes that repository's discovery loop, each at most
// once a second; any other is ignored (202). wakeFor is asked at each
// delivery, so the repositories served may change.
func Router(secret []byte, log *slog.Logger, wakeFor func(repo string) (Wake, bool)) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "webhook")
	var mu sync.Mutex
	wakers := map[string]*waker{} // by lower-case name; only served repositories, so bounded
	lookup := func(repo string) (*waker, bool) {
		wake, ok := wakeFor(repo)
		if !ok {
			return nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		key := strings.ToLower(repo)
		if wakers[key] == nil {
			wakers[key] = newWaker(wake, log.With("repo", redact.Clip(repo, 200)))
		}
		return wakers[key], true
	}
	return &handler{secret: secret, log: log, wakers: lookup, seen: newDeliveries(), now: time.Now}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		h.badBody(w, r, err)
		return
	}
	if reason := h.verify(r.Header, body); reason != "" {
		if n := h.rejected.add(h.now()); n > 0 {
			h.log.Warn("rejected delivery", "reason", reason, "remote", r.RemoteAddr, "rejected", n, "headers", headerText(r.Header))
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	// The signature covers the body only: headers stay untrusted input.
	event, id := redact.Clip(eventName(r.Header), 64), redact.Clip(deliveryID(r.Header), 64)
	if id != "" && !h.seen.firstTime(deliveryID(r.Header), h.now()) {
		h.log.Info("replayed delivery ignored", "event", event, "delivery", id)
		w.WriteHeader(http.StatusOK)
		return
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		h.log.Warn("undecodable delivery", "event", event, "delivery", id, "err", redact.Clip(err.Error(), 200))
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	pr, wk, ok := h.route(r.Header, &p)
	h.log.Debug("delivery", "event", event, "delivery", id, "wake", ok, "pr", pr)
	if !ok {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	wk.add(r.Context(), pr)
	w.WriteHeader(http.StatusNoContent)
}

// secretHeaders are left out of logs.
var secretHeaders = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

// headerText renders a request's headers for a log line, sorted, without
// credentials, in at most maxLoggedHeaders bytes.
func headerText(hdr http.Header) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(hdr)) {
		if secretHeaders[k] {
			continue
		}
		for _, v := range hdr[k] {
			fmt.Fprintf(&b, "%s: %s; ", k, redact.Clip(v, maxLoggedHeaders))
		}
		if b.Len() > maxLoggedHeaders {
			break
		}
	}
	return redact.Clip(strings.TrimSuffix(b.String(), "; "), maxLoggedHeaders-len("..."))
}

func (h *handler) badBody(w http.ResponseWriter, r *http.Request, err error) {
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		if n := h.rejected.add(h.now()); n > 0 {
			h.log.Warn("oversized delivery", "remote", r.RemoteAddr, "limit", maxBody, "rejected", n)
		}
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "cannot read body", http.StatusBadRequest)
}

// verify returns why the delivery's signature is not acceptable, or "".
func (h *handler) verify(hdr http.Header, body []byte) string {
	if len(h.secret) == 0 {
		return "no secret configured"
	}
	sig := firstHeader(hdr, "X-Forgejo-Signature", "X-Gitea-Signature")
	if sig == "" {
		return "missing signature"
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return "malformed signature"
	}
	mac := hmac.New(sha256.New, h.secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return "wrong signature"
	}
	return ""
}

// route says whether a verified delivery should wake a loop, whose (its
// repository's waker), and for which PR.
func (h *handler) route(hdr http.Header, p *payload) (pr int, w *waker, wake bool) {
	if p.Repository == nil {
		return 0, nil, false
	}
	w, served := h.wakers(p.Repository.FullName)
	if !served || !relevant(hdr) {
		return 0, nil, false
	}
	pr, wake = p.prNumber()
	return pr, w, wake
}

// relevant reports whether the delivery's event can change what the pool
// should do. Gitea sends a coarse name in X-Gitea-Event ("pull_request",
// "pull_request_approved", "issue_comment", ...) and a finer one in
// X-Gitea-Event-Type ("pull_request_sync", "pull_request_review_approved",
// "pull_request_comment", ...); Forgejo does the same under X-Forgejo-*.
// Every pull request event starts with "pull_request".
func relevant(hdr http.Header) bool {
	for _, name := range eventNames(hdr) {
		if strings.HasPrefix(name, "pull_request") || name == "issue_comment" || name == "status" {
			return true
		}
	}
	return false
}

func eventNames(hdr http.Header) []string {
	var names []string
	for _, k := range []string{"X-Forgejo-Event-Type", "X-Gitea-Event-Type", "X-Forgejo-Event", "X-Gitea-Event"} {
		if v := hdr.Get(k); v != "" {
			names = append(names, v)
		}
	}
	return names
}

// eventName is the most precise event name of a delivery, for logs.
func eventName(hdr http.Header) string {
	if names := eventNames(hdr); len(names) > 0 {
		return names[0]
	}
	return ""
}

func deliveryID(hdr http.Header) string {
	return firstHeader(hdr, "X-Forgejo-Delivery", "X-Gitea-Delivery")
}

func firstHeader(hdr http.Header, keys ...string) string {
	for _, k := range keys {
		if v := hdr.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// payload holds the fields the handler reads from any event: pull request
// events carry number and pull_request, comment events carry issue (whose
// pull_request is null on a plain issue), status events neither.
type payload struct {
	Number      int `json:"number"`
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Issue *struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	IsPull     bool `json:"is_pull"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// prNumber returns the PR the event concerns, 0 if it names none (or names
// a number no PR has), and false for a comment on a plain issue.
func (p *payload) prNumber() (int, bool) {
	switch {
	case p.Issue != nil && p.Issue.PullRequest == nil && !p.IsPull:
		return 0, false
	case p.Issue != nil:
		return max(p.Issue.Number, 0), true
	case p.Number > 0:
		return p.Number, true
	case p.PullRequest != nil:
		return max(p.PullRequest.Number, 0), true
	default:
		return 0, true
	}
}
