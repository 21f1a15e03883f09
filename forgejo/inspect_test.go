package forgejo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// pagedStatuses is a fake forge holding n statuses of one commit, served
// 50 a page in the order the client asks for, with one status repeated at
// a page boundary as a concurrent write would cause.
func pagedStatuses(t *testing.T, n int) *Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/repos/o/r/statuses/abc", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sort") != "highestindex" {
			t.Errorf("statuses read without a total order: %s", r.URL.RawQuery)
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var batch []map[string]any
		start := (page - 1) * defaultPageSize
		if page > 1 {
			start-- // the last of the previous page again
		}
		for i := start; i < start+defaultPageSize && i < n; i++ {
			batch = append(batch, map[string]any{"id": i + 1, "status": "pending", "context": "c" + strconv.Itoa(i%3),
				"created_at": "2026-07-01T12:00:00Z", "target_url": "http://ci.test/" + strconv.Itoa(i)})
		}
		_ = json.NewEncoder(w).Encode(batch)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := New(context.Background(), srv.URL, "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStatusHistoryPages(t *testing.T) {
	for _, n := range []int{0, 49, 120} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			got, err := pagedStatuses(t, n).StatusHistory(context.Background(), "o", "r", "abc")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("got %d statuses, want %d", len(got), n)
			}
			for i, s := range got {
				if s.ID != int64(i+1) || s.Created.IsZero() || s.TargetURL == "" {
					t.Fatalf("status %d = %+v", i, s)
				}
			}
		})
	}
}

func TestInspectDecoding(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/repos/o/r/pulls/3", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"number":3,"state":"open","mergeable":false,"merged_by":{"login":"carol"},"draft":true,"merge_base":"m1",
			"user":{"login":"alice"},"head":{"ref":"f","sha":"h1"},"base":{"ref":"main","sha":"b1"},"labels":[{"name":"x"}]}`)
	})
	mux.HandleFunc("/api/v1/repos/o/r/pulls/3/reviews/9/comments", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `[{"id":1,"pull_request_review_id":9,"user":{"login":"bot"},"resolver":{"login":"alice"},
			"body":"b","path":"main.go","position":0,"original_position":7}]`)
	})
	mux.HandleFunc("/api/v1/repos/o/r/issues/3/timeline", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") != "1" {
			fmt.Fprint(w, `[]`)
			return
		}
		fmt.Fprint(w, `[{"type":"comment"},{"type":"pull_scheduled_merge"},{"type":"pull_cancel_scheduled_merge"},{"type":"pull_scheduled_merge"}]`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c, err := New(ctx, srv.URL, "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.PRDetail(ctx, "o", "r", 3)
	if err != nil || pr.Author != "alice" || pr.HeadSHA != "h1" || pr.BaseSHA != "b1" || pr.MergeBase != "m1" ||
		!pr.Draft || pr.Mergeable || !pr.HasLabel("x") || pr.MergedBy != "carol" {
		t.Errorf("PRDetail = %+v, %v", pr, err)
	}
	cs, err := c.InlineComments(ctx, "o", "r", 3, 9)
	if err != nil || len(cs) != 1 || cs[0].Resolver != "alice" || cs[0].OldLine != 7 || cs[0].Author != "bot" {
		t.Errorf("InlineComments = %+v, %v", cs, err)
	}
	armed, err := c.AutoMergeArmed(ctx, "o", "r", 3)
	if err != nil || !armed {
		t.Errorf("AutoMergeArmed = %v, %v", armed, err)
	}
	if _, err := c.ReviewDetails(ctx, "o", "r", 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReviewDetails of a missing PR = %v", err)
	}
}
