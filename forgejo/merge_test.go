package forgejo

import (
	"errors"
	"testing"
)

func TestClassifyMerge(t *testing.T) {
	tests := []struct {
		status  int
		message string
		want    MergeOutcome
	}{
		{200, "", MergeDone},
		{201, "", MergeScheduled},
		{404, `{"message":"Not Found"}`, MergeClosed},
		{405, `{"message":"Please try again later"}`, MergeNotReady},
		{405, `{"message":"The PR is already merged"}`, MergeAlready},
		{405, `{"message":"Work in progress PRs cannot be merged"}`, MergeBlocked},
		{405, `{"message":"User not allowed to merge PR"}`, MergeBlocked},
		{409, `{"message":"head out of date"}`, MergeHeadMoved},
		{409, `{"message":"pull request is already scheduled to auto merge"}`, MergeScheduled},
		{409, `{"message":"merge push out of date"}`, MergeNotReady},
		{409, `{"StdOut":"CONFLICT (content): Merge conflict in a.txt"}`, MergeConflict},
		{423, `{"message":"repo is archived"}`, MergeBlocked},
		{413, `{"message":"quota exceeded","user_id":3,"username":"acme"}`, MergeQuota},
		{500, "boom", MergeFailed},
	}
	for _, tt := range tests {
		if got := ClassifyMerge(tt.status, tt.message); got != tt.want {
			t.Errorf("ClassifyMerge(%d, %q) = %s, want %s", tt.status, tt.message, got, tt.want)
		}
	}
}

func TestErrorsSayWhetherToRetry(t *testing.T) {
	tests := []struct {
		status    int
		retryable bool
		is        error
	}{
		{0, true, nil},
		{401, false, ErrUnauthorized},
		{404, false, ErrNotFound},
		{422, false, nil},
		{429, true, nil},
		{500, true, nil},
		{503, true, nil},
	}
	for _, tt := range tests {
		err := newError("get thing", tt.status, errors.New("x"))
		if IsRetryable(err) != tt.retryable {
			t.Errorf("status %d: retryable = %v, want %v (%v)", tt.status, IsRetryable(err), tt.retryable, err)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("status %d: %v is not %v", tt.status, err, tt.is)
		}
	}
}
