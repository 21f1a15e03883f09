package ops

import (
	"strings"
	"testing"

	"pool/statuspage"
)

// TestPageShowsEachAgentServer: with several agent servers the page shows
// each: up or down, its sessions of its slots, those started and lost.
func TestPageShowsEachAgentServer(t *testing.T) {
	st := sample()
	st.AgentServers = []statuspage.AgentServer{
		{URL: "http://127.0.0.1:4096", Role: "review", Labels: map[string]string{"model": "qwen3"}, Up: true, Workers: 4, Sessions: 3, Started: 17},
		{URL: "http://127.0.0.1:4097", Role: "fix", Workers: 1, Started: 2, Lost: 1},
	}
	page := get(t, (&Server{Status: func() statuspage.Status { return st }}).Handler(), "/").Body.String()
	for _, want := range []string{"<h2>Agent servers</h2>",
		`<tr><td>http://127.0.0.1:4096 <span class="state">model=qwen3</span></td><td>review</td><td>up</td><td>3/4</td><td>17</td><td>0</td></tr>`,
		`<tr><td>http://127.0.0.1:4097</td><td>fix</td><td><b>down</b></td><td>0/1</td><td>2</td><td>1</td></tr>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	st.AgentServers = st.AgentServers[:1]
	if page := get(t, (&Server{Status: func() statuspage.Status { return st }}).Handler(), "/").Body.String(); strings.Contains(page, "Agent servers") {
		t.Error("the page of one agent server shows a table of them")
	}
}
