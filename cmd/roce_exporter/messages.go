package main

import "github.com/roce-exporter/roce_exporter/i18n"

// The doctor's, the node page's and plan init's own words, each one whole
// format string with positional verbs (%[1]s): the one place a message
// catalog (golang.org/x/text/message, keyed by these strings, English as
// the fallback) will translate, so no sentence is assembled from pieces a
// translator cannot see together. The checks' messages and fixes are
// health's.
const (
	msgStatusFail    = "FAIL"
	msgStatusWarn    = "WARN"
	msgStatusOK      = "ok"
	msgStatusSkipped = "skipped"

	msgDoctorTitle         = "roce_exporter doctor — node %[1]s, plan %[2]s, %[3]s"
	msgDoctorTitleSample   = "roce_exporter doctor — sample node %[1]s (not this machine), plan %[2]s, %[3]s"
	msgDoctorTitleSampleAs = "roce_exporter doctor — sample node %[1]s (not this machine) as node %[2]s, plan %[3]s, %[4]s"
	msgNoPlan              = "none (--config.file): plan checks skipped"
	msgTwoSamples          = "2 samples %[1]s apart"
	msgOneSample           = "1 sample (rate checks skipped)"
	msgPlanWarningRow      = "cluster plan"
	msgFoldedSubjects      = "%[1]d of them"
	msgFoldedChecks        = "%[1]d checks"
	msgFoldedReason        = "%[1]s: %[2]s"
	msgAt                  = "at:  "
	msgFix                 = "fix: "
	msgCablingTitle        = "cabling (LLDP neighbours from lldpd):"
	msgIncastTitle         = "The switch under incast (PFC and ECN, proven from the hosts):"
	msgIncastLine          = "%[1]s  %[2]s as %[3]s of %[4]s, %[5]s ago"
	msgIncastUnseen        = "not seen here: %[1]s"
	msgIncastUnreadable    = "cannot read the last incast: %[1]v"
	msgIncastNone          = "the switch's PFC and ECN are not proven from this host yet: run `roce_exporter probe run incast --receiver %[1]s` on it and on its senders at the same time (the command prints their names), or enable probes.incast"
	msgSummary             = "%[1]d failed, %[2]d warnings, %[3]d ok, %[4]d skipped"
	msgSummaryPlan         = "%[1]d failed, %[2]d warnings, %[3]d ok, %[4]d skipped; %[5]d warning(s) about the plan itself, at the top"
	msgNothingToCheck      = "NOTHING TO CHECK: %[1]s"
	msgNotRDMANode         = "NOT AN RDMA NODE: %[1]s"
	msgNothingToCheckNote  = "No check could judge anything on this node, so it is not reported healthy; the doctor exits 3."
	msgReasonAbove         = "the reason above"
	msgSampling            = "roce_exporter doctor: sampling, second reading in %[1]s (--interval; Ctrl-C stops)"

	msgSurveyFound           = "%[1]d RDMA ports (%[2]d up) on %[3]d NICs, %[4]d netdevs"
	msgSurveyFoundUnreadable = "%[1]s; %[2]d RDMA device(s) could not be read"
	msgSurveyNoRDMA          = "no RDMA device under %[1]s, and no RDMA-capable NIC on the PCI bus"
	msgSurveyNICsNoRDMA      = "no RDMA device under %[1]s; %[2]d RDMA-capable NIC(s) without an RDMA driver: %[3]s"
	msgSurveyUnreadable      = "%[1]s could not be read"

	msgCabledTo           = "cabled to %[1]s %[2]s"
	msgCabledToDescr      = "cabled to %[1]s %[2]s (%[3]q)"
	msgCabledLastSeen     = "%[1]s, last seen before the link went down"
	msgNoLLDPNeighbour    = "no LLDP neighbour"
	msgPageFailing        = "FAILING: %[1]d failed, %[2]d warnings"
	msgPageWarning        = "WARNING: %[1]d warnings"
	msgPageHealthy        = "HEALTHY: %[1]d checks passed, none failed or warned"
	msgPageNoHealth       = "health collector disabled: no verdict"
	msgPageNodeTitle      = "%[1]s"
	msgPageSampleTitle    = "sample node %[1]s"
	msgPageSampleNotice   = "Sample data, not this machine: the node is read from %[1]s."
	msgPageSampleNoticeAs = "Sample data, not this machine: the node is read from %[1]s. The plan's checks judge it as node %[2]s."
	msgPageNothingDetail  = "Not one check could judge this node: each was skipped for the reason above. The collectors below say what they found."
)

// trText is tr for a message without arguments held in a variable (a
// table's label).
func trText(p *i18n.Printer, msg string) string { return p.Word(msg) }

// tr formats one of the messages above in p's language (the catalogue in
// package i18n; English when p is English or has no translation).
func tr(p *i18n.Printer, format string, args ...any) string { return p.Sprintf(format, args...) }
