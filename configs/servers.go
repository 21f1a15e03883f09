package configs

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cast"
)

// serverKeys are the keys of one entry of agent.servers.
var serverKeys = []string{"url", "password", "password_file", "workers", "role", "labels"}

// servers reads agent.servers, a list of {url, password or password_file,
// workers, role, labels}; none when it is not set. With it, agent.url,
// agent.password and workers are refused: each server has its own.
func (d *decoder) servers() ([]AgentServer, error) {
	raw := d.v.Get("agent.servers")
	if raw == nil || raw == "" {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, &Error{Key: "agent.servers", Reason: "want a list of servers, each with url, workers and role"}
	}
	if len(list) == 0 {
		return nil, nil
	}
	switch {
	case d.str("agent.url") != settingDefault("agent.url"):
		return nil, &Error{Key: "agent.url", Reason: "set agent.url or agent.servers, not both"}
	case d.str("agent.password") != "":
		return nil, &Error{Key: "agent.password", Reason: "set with agent.servers: give each server its password (or password_file) there"}
	case d.str("workers") != settingDefault("workers"):
		return nil, &Error{Key: "workers", Reason: "set with agent.servers: give each server its workers there"}
	}
	out := make([]AgentServer, 0, len(list))
	for i, entry := range list {
		a, err := serverEntry(fmt.Sprintf("agent.servers[%d]", i), entry)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func settingDefault(key string) string {
	for _, s := range settings {
		if s.key == key {
			return s.def
		}
	}
	return ""
}

// serverEntry reads one entry of agent.servers; key names it in errors.
func serverEntry(key string, entry any) (AgentServer, error) {
	m, ok := entry.(map[string]any)
	if !ok {
		return AgentServer{}, &Error{Key: key, Reason: "want url, workers and role"}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(serverKeys, k) {
			return AgentServer{}, &Error{Key: key + "." + printableKey(k), Reason: "unknown key: a server has " + strings.Join(serverKeys, ", ")}
		}
	}
	str := func(k string) string { return strings.TrimSpace(cast.ToString(m[k])) }
	a := AgentServer{URL: strings.TrimRight(str("url"), "/"), Role: strings.ToLower(str("role")), Workers: 1}
	if a.Role == "" {
		a.Role = RoleBoth
	}
	if w := str("workers"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil {
			return AgentServer{}, &Error{Key: key + ".workers", Reason: fmt.Sprintf("want a whole number, got %q", w)}
		}
		a.Workers = n
	}
	if l, ok := m["labels"]; ok {
		labels, err := cast.ToStringMapStringE(l)
		if err != nil {
			return AgentServer{}, &Error{Key: key + ".labels", Reason: "want names and values, such as model: qwen3"}
		}
		a.Labels = labels
	}
	var err error
	a.Password, err = loadSecret(key+".password", str("password"), str("password_file"))
	return a, err
}

// checkServers checks agent.servers: each URL (and no server twice), its
// workers and role, and that some server runs each kind of session the
// pool starts: reviewers always, fixers when fixers.enabled.
func (c Config) checkServers() *Error {
	if len(c.AgentServers) == 0 {
		return nil
	}
	reviews, fixes := false, false
	seen := map[string]int{}
	for i, a := range c.AgentServers {
		key := fmt.Sprintf("agent.servers[%d]", i)
		if err := c.checkServerURL(key+".url", a.URL); err != nil {
			return err
		}
		if j, dup := seen[sameServer(a.URL)]; dup {
			return &Error{Key: key + ".url", Reason: fmt.Sprintf("the same server as agent.servers[%d]: list each server once, with all its workers", j)}
		}
		seen[sameServer(a.URL)] = i
		if err := atLeast(key+".workers", a.Workers, 1); err != nil {
			return err
		}
		if a.Role != RoleReview && a.Role != RoleFix && a.Role != RoleBoth {
			return &Error{Key: key + ".role", Reason: fmt.Sprintf("unknown role %q: review, fix or both", a.Role)}
		}
		reviews, fixes = reviews || a.Reviews(), fixes || a.Fixes()
	}
	switch {
	case !reviews:
		return &Error{Key: "agent.servers", Reason: "no server of role review or both: every PR's reviewer needs one"}
	case !fixes && c.Fixers.Enabled:
		return &Error{Key: "agent.servers", Reason: "no server of role fix or both while fixers.enabled is true: add one, or set fixers.enabled: false"}
	}
	return nil
}

// sameServer is a server URL as two entries naming one server compare:
// scheme and host in lower case, no trailing slash.
func sameServer(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/")
}
