package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// giteaPatches are the changes made to Gitea's source before the test forge
// is built. There is one, and it changes no answer of the API, only what the
// forge spends on each request.
//
// The token cache. Gitea stores a token as a PBKDF2 of 10,000 rounds
// (models/auth HashToken) and keeps the tokens that answered lately in a
// cache (SUCCESSFUL_TOKENS_CACHE_SIZE, 20 by default), so that a request
// with a known token costs a database read instead of a hash. The cache is
// made by a function the token model registers with db.RegisterModel, and
// in Gitea 1.26.0 RegisterModel keeps such a function only when it already
// holds one (`len(registeredInitFuncs) > 0`), so it keeps none: the cache is
// never made, and every request with a token is hashed. A profile of the
// shared forge over 240 s of `go test ./cmd/pool` (2026-12-05) put 42% of its
// CPU in that hash, and the setting changed nothing. The patch tests the
// argument instead (`len(initFunc) > 0`), as the comment above the function
// says it should; with it, the next profile held 0.6 s of hashing in 36.4 s
// sampled, and the shared forge of `go test ./cmd/pool` used 118 CPU-seconds
// instead of 164, the whole package 283 instead of 340 (one run each,
// 2026-12-05; the later run also wrote fewer commit statuses, a change of
// the same day). A cached token is still read from the database at
// each request, so a deleted one is refused at once, as without the cache.
// The one other function registered so makes the cache of Actions' task
// tokens; Actions are off in the test forge.
var giteaPatches = []struct {
	file     string
	old, new string
}{{
	file: "models/db/engine.go",
	old:  "if len(registeredInitFuncs) > 0 && initFunc[0] != nil {",
	new:  "if len(initFunc) > 0 && initFunc[0] != nil {",
}}

// patchGitea applies giteaPatches to the source tree src. A line that is
// not there exactly once is an error: another Gitea version needs the patch
// looked at again.
func patchGitea(src string) error {
	for _, p := range giteaPatches {
		path := filepath.Join(src, filepath.FromSlash(p.file))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("patch gitea: %w", err)
		}
		if n := bytes.Count(b, []byte(p.old)); n != 1 {
			return fmt.Errorf("patch gitea: %s holds %q %d times, want once (Gitea %s)", p.file, p.old, n, GiteaVersion)
		}
		b = bytes.Replace(b, []byte(p.old), []byte(p.new), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("patch gitea: %w", err)
		}
	}
	return nil
}
