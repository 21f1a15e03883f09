package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://forge.example.org", "https://forge.example.org"},
		{"https://bob:hunter2@forge.example.org/api", "https://forge.example.org/api"},
		{"http://token@127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"ftp://u:p@host/x", "ftp://host/x"},
		{"http://u:p@host:bad port", "http://host:bad port"}, // does not parse: scanned as text
		{"not a url at all", "not a url at all"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`Get "http://u:secret@agent.local:4096/session": dial tcp: refused`, `Get "http://agent.local:4096/session": dial tcp: refused`},
		{"two: https://a:b@x.org and http://c@y.org/p", "two: https://x.org and http://y.org/p"},
		{"mail alice@example.org stays", "mail alice@example.org stays"},
		{"http://u:p@ss@host/x", "http://host/x"},  // an unescaped @ in the password: cut whole
		{"a://x@b://y@h", "a://b://h"},             // two URLs, one after the other
		{`"a://\\n@": unknown`, `"a://": unknown`}, // a quoted newline is text, not a space
		{"no url", "no url"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTextTwice: redacting redacted text changes nothing, so text redacted
// in parts (a quoted key) reads the same inside a message redacted whole.
func TestTextTwice(t *testing.T) {
	for _, in := range []string{
		"http://a@b@c@host", "x://a@y://b@z://c@d", "h://u@/p@q", "h://\\n@x h://a b@c",
		`"k://a@\"b@c"`, "s://@@@", "://a@b", "a+b.c-d://u:p@h",
	} {
		once := Text(in)
		if twice := Text(once); twice != once {
			t.Errorf("Text(%q) = %q, but Text of that = %q", in, once, twice)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("héllo", 2); got != "h..." {
		t.Errorf("Clip splits a rune: %q", got)
	}
	if got := Clip("short", 10); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
	if got := Clip("abcdef", 3); got != "abc..." {
		t.Errorf("Clip = %q", got)
	}
}
