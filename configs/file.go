package configs

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/viper"

	"pool/internal/redact"
)

// readFile merges the config file into v and returns its path ("" when
// there is none). A key the settings table does not know is an error naming
// it: a misspelt key would otherwise be ignored in silence.
func readFile(v *viper.Viper, path string) (string, error) {
	if path == "" {
		if _, err := os.Stat("pool.yaml"); err != nil {
			return "", nil
		}
		path = "pool.yaml"
	}
	fv := viper.New()
	fv.SetConfigFile(path)
	if err := fv.ReadInConfig(); err != nil {
		return "", &Error{Key: "config", Reason: fmt.Sprintf("read %s: %s", path, parseError(err))}
	}
	for _, k := range slices.Sorted(slices.Values(fv.AllKeys())) { // sorted: the same file names the same key
		if !known(k) && !(section(k) && fv.Get(k) == nil) {
			return "", &Error{Key: printableKey(k), Reason: fmt.Sprintf("unknown key in %s", path)}
		}
	}
	if err := v.MergeConfigMap(fv.AllSettings()); err != nil {
		return "", &Error{Key: "config", Reason: fmt.Sprintf("read %s: %v", path, err)}
	}
	return path, nil
}

// printableKey is a key read from a file as an error can name it: as it is
// when it is a plain dotted name, quoted (and cut to 64 bytes) when it is
// empty or holds anything else, such as a newline.
func printableKey(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			plain = false
			break
		}
	}
	if plain && len(k) <= 64 {
		return k
	}
	// A key can hold a URL with credentials, as any text in the file can:
	// redacted before the cut, which could leave a password without its @,
	// and again after quoting, as the error's whole text is, where a quoted
	// newline (\n) no longer ends the URL.
	k = redact.Text(k)
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "…"
	}
	return redact.Text(strconv.Quote(k))
}

// known reports whether key is a setting, or "reviewers" given as the plain
// list of accounts (see decoder.reviewers).
func known(key string) bool {
	for _, s := range settings {
		if s.key == key {
			return true
		}
	}
	return key == "reviewers"
}

// section reports whether key names a section of settings (claims for
// claims.trusted): a section whose keys are all commented out reads as an
// empty key.
func section(key string) bool {
	for _, s := range settings {
		if strings.HasPrefix(s.key, key+".") {
			return true
		}
	}
	return false
}

// quotedValue is a value a YAML parser quotes in its message, which may be
// a secret written in the file.
var quotedValue = regexp.MustCompile("`[^`]*`")

// parseError is a parser's message on one line, without the values it quotes.
func parseError(err error) string {
	msg := quotedValue.ReplaceAllString(err.Error(), "a value")
	return strings.Join(strings.Fields(msg), " ")
}
