package forge

import "testing"

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
		{409, `{"message":"PushRejected with remote message: User permission denied for writing"}`, MergeBlocked},
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

// TestRefusalRule: the rule a refused merge names, from the forge's
// answers (Gitea 1.26 services/pull/merge.go, CheckPullBranchProtections;
// Forgejo's 413 for the quota).
func TestRefusalRule(t *testing.T) {
	tests := []struct {
		status  int
		message string
		want    string
	}{
		{405, `{"message":"The head branch is behind the base branch","url":"x"}`, RuleOutdated},
		{405, `{"message":"not ready to merge: Not all required status checks successful"}`, RuleStatusCheck},
		{405, `{"message":"Does not have enough approvals"}`, RuleApprovals},
		{405, `{"message":"There are requested changes"}`, RuleRejected},
		{405, `{"message":"There are official review requests"}`, RuleOfficialRequest},
		{405, `{"message":"Changed protected files"}`, RuleProtectedFiles},
		{405, `{"message":"User not allowed to merge PR"}`, RuleMergeWhitelist},
		{405, `{"message":"Work in progress PRs cannot be merged"}`, RuleWorkInProgress},
		{423, `{"message":"repo is archived"}`, RuleArchived},
		{413, `{"message":"quota exceeded"}`, RuleQuota},
		{409, `{"message":"PushRejected with remote message: unsigned commits are not allowed"}`, RulePushRejected},
		{405, `{"message":""}`, RuleUnknown},
	}
	for _, tt := range tests {
		if got := RefusalRule(tt.status, tt.message); got != tt.want {
			t.Errorf("RefusalRule(%d, %q) = %q, want %q", tt.status, tt.message, got, tt.want)
		}
	}
}
