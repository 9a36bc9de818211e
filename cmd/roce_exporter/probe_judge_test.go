package main

import (
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
)

func TestProbeJudgementOnLandingPage(t *testing.T) {
	store := probes.NewStore()
	if probeJudgement(store) != "" {
		t.Error("a judgement without results")
	}
	now := time.Now()
	for _, peer := range []string{"gpu02", "gpu03"} {
		store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: now, Reason: probes.ReasonTimeout})
		store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: "mlx5_0", Start: now, Success: true})
	}
	page := probeTable(store)
	for _, want := range []string{"<td>mlx5_3</td><td>3</td><td>2</td><td>0</td><td>gpu02, gpu03</td>", "suspect this NIC", "RoCEProbeSuspectNICPort"} {
		if !strings.Contains(page, want) {
			t.Errorf("landing page lacks %q:\n%s", want, page)
		}
	}
}
