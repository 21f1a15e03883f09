package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ForgejoOptions turn on the Forgejo mode: the proxy, in front of the test
// forge (Gitea 1.26), answers as Forgejo v15 does where the two differ
// (shared/FACTS.md, "Where Forgejo differs"). Whatever the options, a 405
// from a merge of an already-merged PR loses its message, as on Forgejo.
type ForgejoOptions struct {
	// QuotaRefusals: the first N merge calls are answered 413, storage quota
	// exceeded, with Forgejo's body, without reaching the forge.
	QuotaRefusals int
	// MergeRaces: the next N merge calls that merge are answered 409 with
	// the body Forgejo gives when another merge of the PR won the race: its
	// error struct dumped as JSON. The PR is merged.
	MergeRaces int
	// MergedTwice: the next N merge calls that merge are sent to the forge
	// a second time, and the client gets the second answer: Forgejo's 405
	// with an empty message for an already-merged PR. The PR is merged.
	MergedTwice int
	// NullShare is the share of PR list pages given a null element, as
	// Forgejo lists a PR it fails to convert.
	NullShare float64
	// ShortPages: review and timeline lists are paged as Forgejo pages them,
	// filtering after paging, so a page in the middle comes back short.
	ShortPages bool
	// NoStatusHook: a hook asking for commit-status events is registered
	// without them and the answer still lists them, as Forgejo accepts the
	// event silently and never sends it.
	NoStatusHook bool
}

// Names of the rewrites in Stats.Rewrites.
const (
	RewriteQuota        = "merge 413 quota"
	RewriteRace         = "merge 409 race"
	RewriteMergedTwice  = "merge 405 already merged"
	RewriteEmptyMessage = "405 message emptied"
	RewriteNull         = "null PR in a list"
	RewriteShortPage    = "short page mid-list"
	RewriteStatusHook   = "status hook event dropped"
	RewriteMergeCommit  = "merge_commit_id ignored"
)

type forgejoMode struct {
	opts ForgejoOptions

	mu        sync.Mutex // guards the fields below
	rnd       *rand.Rand
	quotaLeft int
	racesLeft int
	twiceLeft int
}

func newForgejoMode(opts ForgejoOptions, seed uint64) *forgejoMode {
	return &forgejoMode{opts: opts, rnd: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)),
		quotaLeft: opts.QuotaRefusals, racesLeft: opts.MergeRaces, twiceLeft: opts.MergedTwice}
}

var (
	mergePath    = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/pulls/[0-9]+/merge$`)
	pullsPath    = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/pulls$`)
	filteredPath = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/(pulls/[0-9]+/reviews|issues/[0-9]+/timeline)$`)
	hooksPath    = regexp.MustCompile(`^/api/v1/repos/[^/]+/[^/]+/hooks$`)
)

// serve answers the requests where Forgejo differs and reports whether it did.
func (m *forgejoMode) serve(w http.ResponseWriter, r *http.Request, p *Proxy) bool {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && mergePath.MatchString(path):
		m.merge(w, r, p)
	case r.Method == http.MethodGet && pullsPath.MatchString(path) && m.opts.NullShare > 0:
		m.nullInList(w, r, p)
	case r.Method == http.MethodGet && filteredPath.MatchString(path) && m.opts.ShortPages:
		m.shortPages(w, r, p)
	case r.Method == http.MethodPost && hooksPath.MatchString(path) && m.opts.NoStatusHook:
		m.hookWithoutStatus(w, r, p)
	default:
		return false
	}
	return true
}

// upstreamCall is one request to the forge on behalf of r, with r's
// credentials and headers: method, target (a path and query; "" for r's)
// and body (nil for none).
func (p *Proxy) upstreamCall(r *http.Request, method, target string, body []byte) (*http.Response, []byte, error) {
	out := r.Clone(r.Context())
	out.Method = method
	u := *r.URL
	if target != "" {
		parsed, err := u.Parse(target)
		if err != nil {
			return nil, nil, err
		}
		u = *parsed
	}
	out.URL = &u
	out.Body, out.ContentLength = http.NoBody, 0
	out.Header.Del("Content-Length")
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
	}
	resp, err := p.roundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (m *forgejoMode) take(left *int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *left > 0 {
		*left--
		return true
	}
	return false
}

func (m *forgejoMode) pending(left *int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *left > 0
}

// merge plays Forgejo's merge answers: a quota refusal, a lost race, an
// already-merged PR, 405s without a message, and a mark of a manual merge
// whose merge_commit_id is not read.
func (m *forgejoMode) merge(w http.ResponseWriter, r *http.Request, p *Proxy) {
	if m.take(&m.quotaLeft) {
		p.noteRewrite(RewriteQuota)
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"message": "quota exceeded", "user_id": 1, "username": "owner"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if stripped, ok := withoutSnakeCommitID(body); ok {
		p.noteRewrite(RewriteMergeCommit)
		body = stripped
	}
	resp, answer, err := p.upstreamCall(r, r.Method, "", body)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	if resp.StatusCode == http.StatusOK && m.pending(&m.racesLeft) {
		if race, ok := m.raceAnswer(r, p); ok && m.take(&m.racesLeft) {
			p.noteRewrite(RewriteRace)
			writeRaw(w, http.StatusConflict, race)
			return
		}
	}
	if resp.StatusCode == http.StatusOK && m.take(&m.twiceLeft) {
		again, againBody, err := p.upstreamCall(r, r.Method, "", body)
		if err == nil {
			p.noteRewrite(RewriteMergedTwice)
			resp, answer = again, againBody
		}
	}
	if resp.StatusCode == http.StatusMethodNotAllowed && bytes.Contains(bytes.ToLower(answer), []byte("already merged")) {
		p.noteRewrite(RewriteEmptyMessage)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "", "url": ""})
		return
	}
	send(w, resp, answer)
}

// withoutSnakeCommitID drops merge_commit_id from a body that marks a PR
// merged by hand: Forgejo's form reads only the field spelled
// MergeCommitID (it has no JSON tag), where Gitea reads both.
func withoutSnakeCommitID(body []byte) ([]byte, bool) {
	var form map[string]any
	if json.Unmarshal(body, &form) != nil {
		return nil, false
	}
	if _, ok := form["merge_commit_id"]; !ok {
		return nil, false
	}
	delete(form, "merge_commit_id")
	out, err := json.Marshal(form)
	return out, err == nil
}

// raceAnswer is the 409 body Forgejo gives a merge that lost the race to
// another merge of the same PR: ErrPullRequestHasMerged dumped as JSON.
// Gitea's PR answer has no issue id, so that field stays 0.
func (m *forgejoMode) raceAnswer(r *http.Request, p *Proxy) ([]byte, bool) {
	prPath := strings.TrimSuffix(r.URL.Path, "/merge")
	resp, b, err := p.upstreamCall(r, http.MethodGet, prPath, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	var pr struct {
		ID   int64 `json:"id"`
		Head struct {
			Ref    string `json:"ref"`
			RepoID int64  `json:"repo_id"`
		} `json:"head"`
		Base struct {
			Ref    string `json:"ref"`
			RepoID int64  `json:"repo_id"`
		} `json:"base"`
	}
	if json.Unmarshal(b, &pr) != nil {
		return nil, false
	}
	out, err := json.Marshal(map[string]any{"ID": pr.ID, "IssueID": 0, "HeadRepoID": pr.Head.RepoID,
		"BaseRepoID": pr.Base.RepoID, "HeadBranch": pr.Head.Ref, "BaseBranch": pr.Base.Ref})
	return out, err == nil
}

// nullInList puts a null into a PR list page now and then.
func (m *forgejoMode) nullInList(w http.ResponseWriter, r *http.Request, p *Proxy) {
	resp, body, err := p.upstreamCall(r, r.Method, "", nil)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	var page []json.RawMessage
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page) == 0 {
		send(w, resp, body)
		return
	}
	m.mu.Lock()
	hit := m.rnd.Float64() < m.opts.NullShare
	at := m.rnd.IntN(len(page) + 1)
	m.mu.Unlock()
	if !hit {
		send(w, resp, body)
		return
	}
	page = slices.Insert(page, at, json.RawMessage("null"))
	p.noteRewrite(RewriteNull)
	out, _ := json.Marshal(page)
	send(w, resp, out)
}

// Forgejo's paging defaults: 30 a page unless asked, at most 50.
const (
	defaultPageSize = 30
	maxPageSize     = 50
)

// shortPages serves a review or timeline list as Forgejo does when it
// filters entries out after paging: the full list is read from the forge,
// a page's worth of hidden entries is put after its first entry, and each
// page is cut from that longer list and the hidden entries dropped. So page
// 1 holds one entry, short, and the rest follow on the next pages; no entry
// is lost or repeated.
func (m *forgejoMode) shortPages(w http.ResponseWriter, r *http.Request, p *Proxy) {
	q := r.URL.Query()
	limit := pageParam(q.Get("limit"), defaultPageSize)
	if limit > maxPageSize {
		limit = maxPageSize
	}
	page := pageParam(q.Get("page"), 1)
	all, failed, failedBody, err := m.readAll(r, p)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	if failed != nil {
		send(w, failed, failedBody)
		return
	}
	virtual := all
	if len(all) > 0 {
		hidden := make([]json.RawMessage, limit-1)
		virtual = slices.Concat(all[:1], hidden, all[1:])
	}
	from, to := min((page-1)*limit, len(virtual)), min(page*limit, len(virtual))
	out := []json.RawMessage{}
	for _, e := range virtual[from:to] {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) < limit && to < len(virtual) {
		p.noteRewrite(RewriteShortPage)
	}
	b, _ := json.Marshal(out)
	total := len(virtual) // reviews: the unfiltered count
	if strings.HasSuffix(r.URL.Path, "/timeline") {
		total = len(out) // the timeline: the entries of this answer alone, as the forge counts them
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	writeRaw(w, http.StatusOK, b)
}

func pageParam(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return def
	}
	return n
}

// readAll reads every page of the list r asks for from the forge. An
// answer that is not a 200 list is returned, with its body, for the client
// to see.
func (m *forgejoMode) readAll(r *http.Request, p *Proxy) (all []json.RawMessage, failed *http.Response, failedBody []byte, err error) {
	for page := 1; ; page++ {
		target := fmt.Sprintf("%s?limit=%d&page=%d", r.URL.Path, maxPageSize, page)
		resp, body, err := p.upstreamCall(r, http.MethodGet, target, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		var batch []json.RawMessage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &batch) != nil {
			return nil, resp, body, nil
		}
		all = append(all, batch...)
		if len(batch) < maxPageSize {
			return all, nil, nil, nil
		}
	}
}

// hookWithoutStatus registers a hook without the status event it asks for,
// and answers as if it had it.
func (m *forgejoMode) hookWithoutStatus(w http.ResponseWriter, r *http.Request, p *Proxy) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var hook map[string]any
	events, _ := stringList(body, &hook)
	if !slices.Contains(events, "status") {
		resp, answer, err := p.upstreamCall(r, r.Method, "", body)
		if err != nil {
			http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		send(w, resp, answer)
		return
	}
	hook["events"] = slices.DeleteFunc(events, func(e string) bool { return e == "status" })
	stripped, _ := json.Marshal(hook)
	resp, answer, err := p.upstreamCall(r, r.Method, "", stripped)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	var created map[string]any
	if got, err := stringList(answer, &created); err == nil && resp.StatusCode/100 == 2 {
		created["events"] = append(got, "status")
		answer, _ = json.Marshal(created)
	}
	p.noteRewrite(RewriteStatusHook)
	send(w, resp, answer)
}

// stringList decodes a JSON object into obj and returns its "events" list.
func stringList(b []byte, obj *map[string]any) ([]string, error) {
	if err := json.Unmarshal(b, obj); err != nil {
		return nil, err
	}
	raw, _ := (*obj)["events"].([]any)
	var out []string
	for _, e := range raw {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
