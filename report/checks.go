package report

import "pool/lifecycle"

// Check is the newest status of one context on the head commit, judged by
// the lifecycle's rules, which the supervisor shares.
type Check = lifecycle.Check

// Checks keeps the newest status per context and marks superseded
// cancellations (lifecycle.Checks).
var Checks = lifecycle.Checks
