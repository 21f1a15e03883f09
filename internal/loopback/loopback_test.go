package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.3.4.5": true, "::1": true,
		"": false, "example.org": false, "10.0.0.1": false, "localhost.example.org": false, "0.0.0.0": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
