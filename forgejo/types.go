package forgejo

import "pool/forge"

// The plain types live in package forge (which links no SDK); these
// aliases keep this package's callers as they were.
type (
	PR          = forge.PR
	Comment     = forge.Comment
	Review      = forge.Review
	Status      = forge.Status
	Protection  = forge.Protection
	MergeResult = forge.MergeResult
	// MergeOutcome is the forge's answer to a merge call, classified.
	MergeOutcome = forge.MergeOutcome
)

// Review states as the forge names them (forge.Review*).
const (
	ReviewApproved       = forge.ReviewApproved
	ReviewRequestChanges = forge.ReviewRequestChanges
	ReviewComment        = forge.ReviewComment
	ReviewRequested      = forge.ReviewRequested
)

// Merge outcomes (forge.Merge*).
const (
	MergeDone      = forge.MergeDone
	MergeScheduled = forge.MergeScheduled
	MergeNotReady  = forge.MergeNotReady
	MergeBlocked   = forge.MergeBlocked
	MergeAlready   = forge.MergeAlready
	MergeHeadMoved = forge.MergeHeadMoved
	MergeConflict  = forge.MergeConflict
	MergeClosed    = forge.MergeClosed
	MergeQuota     = forge.MergeQuota
	MergeFailed    = forge.MergeFailed
)

// The rules a merge refusal names (forge.Rule*).
const (
	RuleOutdated        = forge.RuleOutdated
	RuleStatusCheck     = forge.RuleStatusCheck
	RuleApprovals       = forge.RuleApprovals
	RuleRejected        = forge.RuleRejected
	RuleOfficialRequest = forge.RuleOfficialRequest
	RuleProtectedFiles  = forge.RuleProtectedFiles
	RuleSigned          = forge.RuleSigned
	RuleMergeWhitelist  = forge.RuleMergeWhitelist
	RuleWorkInProgress  = forge.RuleWorkInProgress
	RuleArchived        = forge.RuleArchived
	RuleQuota           = forge.RuleQuota
	RuleUnknown         = forge.RuleUnknown
)

// RefusalRule names the rule a refused merge's answer cites (forge.RefusalRule).
func RefusalRule(status int, message string) string { return forge.RefusalRule(status, message) }
