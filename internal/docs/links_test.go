package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// link is a markdown link or image target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestRelativeLinksResolve: every relative link in README.md and docs/*.md
// names a file that exists, and a link with #anchor a heading of that file
// (GitHub's anchors: lowercase, punctuation dropped, spaces to '-').
func TestRelativeLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(b)) {
			if msg := check(file, target); msg != "" {
				rel, _ := filepath.Rel(root, file)
				t.Errorf("%s: link %s: %s", rel, target, msg)
			}
		}
	}
}

// links are the relative link targets of text outside fenced code.
func links(text string) []string {
	var out []string
	for _, line := range prose(text) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, target)
		}
	}
	return out
}

// check says what is wrong with target, linked from file, or "".
func check(file, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		return err.Error()
	}
	for _, a := range anchors(string(b)) {
		if a == anchor {
			return ""
		}
	}
	return "no heading with that anchor in " + filepath.Base(dest)
}

// anchors are the anchors GitHub gives the headings of text; a repeated
// heading's get -1, -2, ...
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, line := range prose(text) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(title, " ") {
			continue
		}
		a := slug(title)
		if n := seen[a]; n > 0 {
			out = append(out, a+"-"+strconv.Itoa(n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's anchor of a heading's text.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// prose is text's lines outside fenced code blocks.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Setting up the reviewer":                        "setting-up-the-reviewer",
		"For the operator: `--ops-listen`":               "for-the-operator---ops-listen",
		"Latency: a warm work tree per slot":             "latency-a-warm-work-tree-per-slot",
		"Merge backlog, fair run,, 2026-11-30 17:57 UTC": "merge-backlog-fair-run-2026-11-30-1757-utc",
	} {
		if got := slug(title); got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
	}
}
