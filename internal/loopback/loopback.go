// Package loopback says whether a host name stays on this machine, for the
// rules that allow plain http, or no password, only there.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host names this machine: localhost or a loopback
// address.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
