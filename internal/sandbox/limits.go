package sandbox

import "time"

// EndToEndLimit bounds an end-to-end test of the forge or the agent server
// outside cmd/pool (whose tests end on a stall instead, not on a wall
// time): far past the pace of a loaded machine, where one forge call took
// 34 s and creating a PR 33 s with other tests beside it, and well inside
// the test command's 45 minutes.
const EndToEndLimit = 20 * time.Minute
