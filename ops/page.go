package ops

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"pool/forge"
	"pool/statuspage"
)

// refreshSeconds is how often the page reloads itself (a meta refresh: no
// script).
const refreshSeconds = 5

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"age":    func(now, t time.Time) string { return Age(now.Sub(t)) },
	"short":  forge.Short,
	"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"inc":    func(i int) int { return i + 1 },
	"pr":     statuspage.PRName,
	"anchor": statuspage.Anchor,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>pool · {{.S.Repo}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1f23; }
h1 { font-size: 1.4em; margin: 0 0 .3em; } h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #d0d7de; vertical-align: top; }
th { background: #f6f8fa; }
.meta { color: #57606a; } .meta span { margin-right: 1.2em; }
.state { font-family: ui-monospace, monospace; }
.done td { color: #57606a; }
.empty { color: #57606a; font-style: italic; }
:target { background: #fff8c5; }
</style>
</head>
<body>
<h1>pool · {{.S.Repo}}</h1>
<p class="meta"><span>instance <b>{{.S.Instance}}</b></span><span>version {{.S.Version}}</span><span>up {{.Uptime}}</span>
<span>slots {{.S.Busy}}/{{.S.Workers}} busy</span><span>last cycle {{if .S.LastCycle.IsZero}}none yet{{else}}{{age .S.Now .S.LastCycle}} ago{{end}}</span></p>
<p class="meta"><span>forge {{.S.ForgeURL}}</span><span>agent {{.S.AgentURL}}</span><span>as of {{clock .S.Now}} UTC, refreshed every {{.Refresh}} s</span></p>

{{if .S.Repos}}<h2>Repositories</h2>
<table>
<tr><th>repository</th><th>slots held</th><th>open PRs tracked</th><th>merged</th><th>last cycle</th></tr>
{{range .S.Repos}}<tr><td>{{.Repo}}</td><td>{{.Busy}}</td><td>{{.Open}}</td><td>{{.Merged}}</td><td>{{if .LastCycle.IsZero}}none yet{{else}}{{age $.S.Now .LastCycle}} ago{{end}}</td></tr>
{{end}}{{with .S.Total}}<tr><th>total</th><th>{{.Busy}}</th><th>{{.Open}}</th><th>{{.Merged}}</th><th></th></tr>{{end}}
</table>
{{end}}
{{if gt (len .S.AgentServers) 1}}<h2>Agent servers</h2>
<table>
<tr><th>server</th><th>role</th><th>state</th><th>sessions</th><th>started</th><th>lost</th></tr>
{{range .S.AgentServers}}<tr><td>{{.URL}}{{range $k, $v := .Labels}} <span class="state">{{$k}}={{$v}}</span>{{end}}</td><td>{{.Role}}</td><td>{{if .Up}}up{{else}}<b>down</b>{{end}}</td><td>{{.Sessions}}/{{.Workers}}</td><td>{{.Started}}</td><td>{{.Lost}}</td></tr>
{{end}}</table>
{{end}}
<h2>Slots</h2>
<table>
<tr><th>slot</th><th>PR</th><th>title</th><th>kind</th><th>age</th><th>session</th></tr>
{{range $i, $s := .S.Slots}}<tr><td>{{inc $i}}</td><td>{{pr $s.Repo $s.PR}}</td><td>{{$s.Title}}</td><td>{{if $s.Kind}}{{$s.Kind}}{{else}}claiming{{end}}</td><td>{{age $.S.Now $s.Since}}</td><td class="state">{{$s.Session}}</td></tr>
{{else}}<tr><td colspan="6" class="empty">all slots free</td></tr>
{{end}}</table>

{{with .S.Trains}}<h2>Merge trains</h2>
<table>
<tr><th>base</th><th>cars, front car first</th></tr>
{{range $t := .}}<tr><td>{{if $t.Repo}}{{$t.Repo}}:{{end}}{{$t.Base}}</td><td>{{range $i, $n := $t.PRs}}{{if $i}}, {{end}}<a href="#{{anchor $t.Repo $n}}">{{pr $t.Repo $n}}</a>{{end}}</td></tr>
{{end}}</table>
{{end}}
<h2>Pull requests</h2>
<table>
<tr><th>PR</th><th>title</th><th>head</th><th>state</th><th>attempts</th><th>last forge answer</th><th>next</th></tr>
{{range .S.PRs}}<tr id="{{anchor .Repo .Number}}"{{if .Done}} class="done"{{end}}><td>{{if .URL}}<a href="{{.URL}}">{{pr .Repo .Number}}</a>{{else}}{{pr .Repo .Number}}{{end}}</td><td>{{.Title}}</td><td class="state">{{short .Head}}</td><td class="state">{{.State}}</td><td>{{.Attempts}}</td><td>{{.LastAnswer}}</td><td>{{.Next}}</td></tr>
{{else}}<tr><td colspan="7" class="empty">no pull requests tracked</td></tr>
{{end}}</table>

<h2>Last warnings</h2>
<table>
<tr><th>time (UTC)</th><th>level</th><th>message</th><th>details</th></tr>
{{range .S.Warnings}}<tr><td>{{clock .Time}}</td><td>{{.Level}}</td><td>{{.Message}}</td><td class="state">{{.Attrs}}</td></tr>
{{else}}<tr><td colspan="4" class="empty">none</td></tr>
{{end}}</table>
</body>
</html>
`))

func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	st := s.Status()
	var b bytes.Buffer
	data := struct {
		S       statuspage.Status
		Uptime  string
		Refresh int
	}{st, Age(st.Uptime()), refreshSeconds}
	if err := pageTemplate.Execute(&b, data); err != nil {
		http.Error(w, "rendering the status page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// Age renders a duration as a person reads it: 42s, 3m05s, 2h07m, 3d04h.
func Age(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}
