package main

import (
	"fmt"
	"html"
	"strings"

	"github.com/roce-exporter/roce_exporter/probes"
)

// probeJudgement is the landing page's local view of the pair probes: per
// rail the distinct peers its fresh results failed and passed with, and
// what that points at as far as this node can tell (the RoCEProbeSuspect*
// alerts confirm it with the peers' own results).
func probeJudgement(store *probes.Store) string {
	js := store.Judge()
	if len(js) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Probe judgement (fresh results)</h2><table><tr><th>probe</th><th>device</th><th>rail</th><th>peers failed</th><th>peers passed</th><th>failed with</th></tr>")
	kinds := map[string]bool{}
	for _, j := range js {
		kinds[j.Probe] = true
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>",
			html.EscapeString(j.Probe), html.EscapeString(j.Device), j.Rail, j.PeersFailed, j.PeersPassed, html.EscapeString(strings.Join(j.FailedPeers, ", ")))
	}
	b.WriteString("</table>")
	for _, k := range []string{probes.KindIBWriteBW, probes.KindIBWriteLat} {
		if kinds[k] {
			fmt.Fprintf(&b, "<p>%s: %s</p>", html.EscapeString(k), html.EscapeString(probes.LocalVerdict(js, k)))
		}
	}
	return b.String()
}
