package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/viper"
)

// decoder converts viper values and keeps the first error, naming its key.
type decoder struct {
	v   *viper.Viper
	err error
}

func (d *decoder) str(key string) string { return strings.TrimSpace(d.v.GetString(key)) }

func (d *decoder) fail(key, reason string) {
	if d.err == nil {
		d.err = &Error{Key: key, Reason: reason}
	}
}

func (d *decoder) integer(key string) int {
	s := d.str(key)
	n, err := strconv.Atoi(s)
	if err != nil {
		d.fail(key, fmt.Sprintf("want a whole number, got %q", s))
	}
	return n
}

func (d *decoder) duration(key string) time.Duration {
	s := d.str(key)
	t, err := time.ParseDuration(s)
	if err != nil {
		d.fail(key, fmt.Sprintf("want a duration such as 30s or 5m, got %q", s))
	}
	return t
}

func (d *decoder) boolean(key string) bool {
	s := d.str(key)
	b, err := strconv.ParseBool(s)
	if err != nil {
		d.fail(key, fmt.Sprintf("want true or false, got %q", s))
	}
	return b
}

// size reads a byte count: a whole number of bytes, or one with a KiB, MiB
// or GiB suffix ("16MiB", "512 KiB").
func (d *decoder) size(key string) int64 {
	s := d.str(key)
	n, err := parseSize(s)
	if err != nil {
		d.fail(key, fmt.Sprintf("want a size such as 16MiB or 1048576, got %q", s))
	}
	return n
}

var sizeUnits = []struct {
	label string
	shift uint
}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

func parseSize(s string) (int64, error) {
	num := strings.ToLower(strings.TrimSpace(s))
	var shift uint
	for _, u := range sizeUnits {
		if suffix := strings.ToLower(u.label); strings.HasSuffix(num, suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(num, suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n << shift, nil
}

// sizeText writes n the way parseSize reads it back, in the largest whole unit.
func sizeText(n int64) string {
	for _, u := range sizeUnits {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.label
		}
	}
	return "0"
}

func (d *decoder) list(key string) []string {
	var parts []string
	for _, part := range d.v.GetStringSlice(key) {
		parts = append(parts, strings.Split(part, ",")...)
	}
	return trimmed(parts)
}

// reviewers reads the reviewers section; a file may also give the accounts
// alone, as a plain list (reviewers: [a, b]).
func (d *decoder) reviewers() ([]string, bool) {
	switch raw := d.v.Get("reviewers").(type) {
	case []any, []string, string:
		var parts []string
		for _, a := range cast.ToStringSlice(raw) {
			parts = append(parts, strings.Split(a, ",")...)
		}
		return trimmed(parts), false
	}
	return d.list("reviewers.accounts"), d.boolean("reviewers.allow_unofficial")
}

func trimmed(parts []string) []string {
	var out []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// loopbackDefault binds a bare port (":9090" or "9090") to loopback: the ops
// listener is exposed further only when asked for by name.
func loopbackDefault(addr string) string {
	if addr == "" {
		return ""
	}
	if _, err := strconv.Atoi(addr); err == nil {
		return "127.0.0.1:" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// unique keeps the first of names that the forge would take for one
// (it ignores case).
func unique(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, n) }) {
			out = append(out, n)
		}
	}
	return out
}

func splitRepo(s string) (owner, name string) {
	owner, name, _ = strings.Cut(s, "/")
	return owner, name
}

// loadSecret reads a secret given inline or in a file (key_file), not both.
func loadSecret(key, value, file string) (string, error) {
	if value != "" && file != "" {
		return "", &Error{Key: key, Reason: fmt.Sprintf("set %s or %s_file, not both", key, key)}
	}
	if file == "" {
		return value, nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", &Error{Key: key + "_file", Reason: fmt.Sprintf("cannot read: %v", err)}
	}
	// The agent server runs what strangers wrote; its user must not read
	// the pool's secrets, nor write them, and it may be in the pool's group
	// or the work trees' group.
	switch perm := fi.Mode().Perm(); {
	case perm&0o004 != 0:
		return "", &Error{Key: key + "_file", Reason: fmt.Sprintf("%s is readable by every user (mode %04o): chmod 600 %s", file, perm, file)}
	case perm&0o062 != 0:
		return "", &Error{Key: key + "_file", Reason: fmt.Sprintf("%s is open to its group or other users (mode %04o): chmod 600 %s", file, perm, file)}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &Error{Key: key + "_file", Reason: fmt.Sprintf("cannot read: %v", err)}
	}
	return strings.TrimSpace(string(b)), nil
}

func defaultStateDir() string {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "pool")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "pool")
	}
	return filepath.Join(os.TempDir(), "pool-state")
}
