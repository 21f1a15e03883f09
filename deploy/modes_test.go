package deploy

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestInstallLinesLetThePoolReadItsConfig: the install lines of
// pool.service and docs/operations.md leave /etc/pool/pool.yaml readable by the
// pool's user (pool), and by no other user (the agent's is in pool's
// group): the directory passable, the file the pool's, mode 0600.
func TestInstallLinesLetThePoolReadItsConfig(t *testing.T) {
	mode := regexp.MustCompile(`-m (0[0-7]{3})`)
	for _, file := range []string{"pool.service", "../docs/operations.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "install ") {
				continue
			}
			m := mode.FindStringSubmatch(line)
			switch {
			case strings.Contains(line, "install -d") && strings.Contains(line, "/etc/pool") && !strings.Contains(line, "/etc/pool-"):
				perm, _ := strconv.ParseUint(m[1], 8, 32)
				if perm&0o001 == 0 && !strings.Contains(line, "-o pool") {
					t.Errorf("%s: %q: the pool's user cannot pass through /etc/pool", file, strings.TrimSpace(line))
				}
			case strings.Contains(line, "/etc/pool/pool.yaml"):
				if m == nil || m[1] != "0600" || !strings.Contains(line, "-o pool") {
					t.Errorf("%s: %q: want pool.yaml installed -o pool -m 0600", file, strings.TrimSpace(line))
				}
			}
		}
	}
}
