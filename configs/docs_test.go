package configs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryKeyIsInTheConfigurationTable: every key of the settings table
// (the keys Load accepts in a file) names a row of the table in
// docs/configuration.md, in the row's first column, so the documentation
// gains a row when the code gains a key.
func TestEveryKeyIsInTheConfigurationTable(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 2 && strings.HasPrefix(line, "|") {
			first = append(first, cells[1])
		}
	}
	column := strings.Join(first, "\n")
	for _, s := range settings {
		word := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(s.key) + `($|[^\w.])`)
		if !word.MatchString(column) {
			t.Errorf("config key %s is in no row of docs/configuration.md's table", s.key)
		}
	}
}
