package forgejo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"pool/forge"
)

type apiBranchSummary struct {
	Protected         bool     `json:"protected"`
	RequiredApprovals int      `json:"required_approvals"`
	EnableStatusCheck bool     `json:"enable_status_check"`
	StatusContexts    []string `json:"status_check_contexts"`
	UserCanMerge      bool     `json:"user_can_merge"`
	RuleName          string   `json:"effective_branch_protection_name"`
}

type apiProtection struct {
	RuleName                 string   `json:"rule_name"`
	BranchName               string   `json:"branch_name"` // older servers name the rule here
	EnableStatusCheck        bool     `json:"enable_status_check"`
	StatusContexts           []string `json:"status_check_contexts"`
	RequiredApprovals        int      `json:"required_approvals"`
	EnableApprovalsWhitelist bool     `json:"enable_approvals_whitelist"`
	ApprovalsWhitelistUsers  []string `json:"approvals_whitelist_username"`
	ApprovalsWhitelistTeams  []string `json:"approvals_whitelist_teams"`
	BlockOnRejected          bool     `json:"block_on_rejected_reviews"`
	BlockOnOfficialRequests  bool     `json:"block_on_official_review_requests"`
	BlockOnOutdated          bool     `json:"block_on_outdated_branch"`
	DismissStale             bool     `json:"dismiss_stale_approvals"`
	IgnoreStale              bool     `json:"ignore_stale_approvals"`
	RequireSigned            bool     `json:"require_signed_commits"`
}

func (a apiProtection) name() string {
	if a.RuleName != "" {
		return a.RuleName
	}
	return a.BranchName
}

// Protection reads the protection in force on branch: the branch summary,
// then, when the token may read them, the rule's settings. A rule the
// token may not read is not an error: Full stays false.
func (c *Client) Protection(ctx context.Context, owner, repo, branch string) (forge.Protection, error) {
	op := fmt.Sprintf("read protection of %s/%s:%s", owner, repo, branch)
	var b apiBranchSummary
	if err := c.getJSON(ctx, op, repoPath(owner, repo)+"/branches/"+branchPath(branch), &b); err != nil {
		return forge.Protection{}, err
	}
	p := forge.Protection{Protected: b.Protected, Rule: b.RuleName, UserCanMerge: b.UserCanMerge,
		RequiredApprovals: b.RequiredApprovals, StatusCheck: b.EnableStatusCheck, StatusContexts: b.StatusContexts}
	if !p.Protected || p.Rule == "" {
		return p, nil // no rule, or a token that does not administer the repository
	}
	var rules []apiProtection
	err := c.getJSON(ctx, op, repoPath(owner, repo)+"/branch_protections", &rules)
	if errors.Is(err, ErrNotFound) || isForbidden(err) {
		return p, nil
	}
	if err != nil {
		return forge.Protection{}, err
	}
	for _, r := range rules {
		if r.name() == p.Rule {
			return r.protection(p), nil
		}
	}
	return p, nil
}

func (a apiProtection) protection(p forge.Protection) forge.Protection {
	p.Full = true
	p.RequiredApprovals, p.StatusCheck, p.StatusContexts = a.RequiredApprovals, a.EnableStatusCheck, a.StatusContexts
	p.ApprovalsWhitelist = a.EnableApprovalsWhitelist
	p.ApprovalsWhitelistUsers, p.ApprovalsWhitelistTeams = a.ApprovalsWhitelistUsers, a.ApprovalsWhitelistTeams
	p.BlockOnRejected, p.BlockOnOfficialRequests, p.BlockOnOutdated = a.BlockOnRejected, a.BlockOnOfficialRequests, a.BlockOnOutdated
	p.DismissStale, p.IgnoreStale, p.RequireSigned = a.DismissStale, a.IgnoreStale, a.RequireSigned
	return p
}

func isForbidden(err error) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Status == 403
}

// branchPath escapes each segment of a branch name (which may hold '/').
func branchPath(branch string) string {
	parts := strings.Split(branch, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
