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
		{"no url", "no url"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
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
