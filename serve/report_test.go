package serve

import (
	"slices"
	"strings"
	"testing"

	"pool/pool"
)

func TestReportsOfSeveralRepositoriesAdd(t *testing.T) {
	a := pool.Report{Repo: "acme/b", InstanceID: "i-a", Reviewed: 8, Merged: 7, Retrying: 1, PendingMerge: []int{3}, Cycles: 20, PeakSlots: 2}
	b := pool.Report{Repo: "acme/a", InstanceID: "i-b", Reviewed: 1, Merged: 1, Cycles: 5, PeakSlots: 1}
	got := add(add(pool.Report{}, a), b)
	if got.InstanceID != "i-a" || got.Reviewed != 9 || got.Merged != 8 || got.Retrying != 1 || got.Cycles != 25 ||
		got.PeakSlots != 2 || !slices.Equal(got.PendingMerge, []int{3}) || len(got.Repos) != 2 || got.Repos[0].Repo != "acme/a" {
		t.Errorf("sum = %+v", got)
	}
	var out strings.Builder
	if err := WriteReport(&out, got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TOTAL_PRS_REVIEWED: 9\n", "  - Approved and merged: 8\n", "PENDING_MERGE_PRS: [acme/b#3]\n",
		"BY_REPOSITORY:\n  - acme/a: reviewed 1, merged 1,", "\n  - acme/b: reviewed 8, merged 7,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReportOfOneRepositoryIsAsBefore(t *testing.T) {
	var out strings.Builder
	if err := WriteReport(&out, pool.Report{InstanceID: "i", Reviewed: 2, Merged: 1, PendingMerge: []int{4}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "BY_REPOSITORY") || !strings.Contains(out.String(), "PENDING_MERGE_PRS: [#4]\n") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestReportCountsSessionsPerAgentServer(t *testing.T) {
	var out strings.Builder
	r := pool.Report{InstanceID: "i", AgentServers: []pool.ServerCount{{URL: "http://127.0.0.1:4096", Started: 7}, {URL: "http://127.0.0.1:4097", Started: 5, Lost: 1}}}
	if err := WriteReport(&out, r); err != nil {
		t.Fatal(err)
	}
	want := "SESSIONS_BY_AGENT_SERVER:\n  - http://127.0.0.1:4096: 7 started, 0 lost\n  - http://127.0.0.1:4097: 5 started, 1 lost\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}
