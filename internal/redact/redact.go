// Package redact keeps credentials out of what the pool prints: a URL is
// never shown with its user info, and text from a server is clipped.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL returns raw without its user info. Text that does not parse as a URL
// is scanned like any other text (see Text).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return Text(raw)
	}
	u.User = nil
	return u.String()
}

// userinfo matches the user info of any URL written in text:
// scheme://user:password@ up to the host. It runs to the last @ before the
// host, as a URL parser reads it, so a password holding an unescaped @ is
// cut whole, and a second pass finds nothing more.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s"']*@`)

// Text removes the user info of every URL written in s.
func Text(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllString(s, "$1")
}

// Clip shortens s to at most n bytes (not splitting a UTF-8 sequence), marking
// the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
