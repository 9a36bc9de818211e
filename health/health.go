// Package health checks a node's RDMA / RoCE setup against what RoCE needs and what the
// cluster plan expects, and says how to fix each difference.
//
// Every check is a pure function of the collector's Snapshot (with its Previous scrape
// for rates), the plan and the node's name: the same inputs always give the same
// findings in the same order. Nothing here reads the system or changes it, so the
// exporter can run the checks on every scrape and the doctor can run them once.
//
// The findings are written for an operator with little RDMA background: each message
// carries the values that were observed, and each fix is a command to run or a thing to
// look at. When the root cause hides everything else (no RDMA device at all), the
// root-cause checks fail and every other check is skipped with that reason, so the
// reader sees one problem instead of twenty symptoms. RoCE checks (GIDs, RoCE mode,
// PFC, trust, ECN, the RoCE path MTU) skip, with the reason, every port that is not
// RoCE: InfiniBand, iWARP (node type RNIC, RDMA over TCP), EFA (link layer
// unspecified). A node with no RDMA hardware
// that the plan does not list is not an RDMA node: every check is skipped, nothing
// fails, so an exporter on the CPU-only nodes of a mixed cluster does not page.
package health

import (
	"cmp"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// Status is the outcome of one check for one subject.
type Status string

// The statuses. A skipped finding says in its message why the check could not run.
const (
	StatusOK      Status = "ok"
	StatusWarn    Status = "warn"
	StatusFail    Status = "fail"
	StatusSkipped Status = "skipped"
)

// statusesWorstFirst is the one order of the statuses: what failed, what
// warned, what passed, and last what could not be judged. A skip is not worse
// than a pass: it asks nothing of the operator (its root cause, if any, fails
// above it), so the doctor folds the skips at the end and the node page keeps
// them in a closed section after the passes.
var statusesWorstFirst = [...]Status{StatusFail, StatusWarn, StatusOK, StatusSkipped}

// StatusesWorstFirst returns the statuses in the order the doctor prints them
// and the node page lists them.
func StatusesWorstFirst() []Status { return slices.Clone(statusesWorstFirst[:]) }

// Rank is the status's place in StatusesWorstFirst, 0 for the worst; a status
// this version does not know ranks last.
func (s Status) Rank() int {
	if i := slices.Index(statusesWorstFirst[:], s); i >= 0 {
		return i
	}
	return len(statusesWorstFirst)
}

// SortWorstFirst orders findings by status, worst first. It is stable: within
// a status the findings keep the checks' order (layer by layer, ports in rail
// order).
func SortWorstFirst(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(a.Status.Rank(), b.Status.Rank()) })
}

// Finding is one check's verdict on one subject.
type Finding struct {
	// ID is the check's stable id, e.g. "mtu_matches_plan".
	ID string `json:"id"`
	// Subject is an RDMA device ("mlx5_0", or "mlx5_0/2" on a multi-port device), a
	// network interface ("ens1f0np0") or "node": the node's own name, which may hold
	// bytes that are not UTF-8 (node.LabelUTF8 prints it).
	Subject string `json:"subject"`
	Status  Status `json:"status"`
	// Message is one line saying what was found, with the observed values.
	Message string `json:"message"`
	// Fix is a concrete next step: the command to run or the thing to look at. It is
	// empty when the status is ok.
	Fix string `json:"fix"`
	// Severity is what a finding that is not ok asks of the operator: critical
	// for a failure of a check whose fault hurts a running job now, warning
	// (a ticket) for a warning or for a failure of static configuration;
	// empty when ok or skipped.
	Severity Severity `json:"severity,omitempty"`
	// MessageText and FixText are Message and Fix as format and arguments, for
	// printing them in the reader's language (package i18n); Message and Fix
	// are their English, which the JSON and the metrics carry. FixText's
	// arguments carry the same shell quoting of the node's names as Fix;
	// whoever prints them strips escapes as Message and Fix are
	// (node.Printable, node.ValidUTF8).
	MessageText Text `json:"-"`
	FixText     Text `json:"-"`
}

// Severity is how urgent a finding is: the severity label of
// roce_health_check_info, which routes RoCEHealthCheckFailed.
type Severity string

// The severities.
const (
	// SeverityCritical: a running job is hurt now (a link down, RoCE on a
	// lossy class, a PFC storm, connections torn down): page someone.
	SeverityCritical Severity = "critical"
	// SeverityWarning: static configuration or history that costs
	// performance or will hurt later (the IOMMU mode, ACS, GPU↔NIC
	// placement, trust mode): a ticket and a maintenance window.
	SeverityWarning Severity = "warning"
)

// Check describes one check for documentation and for listing.
type Check struct {
	ID          string
	Title       string
	Description string
	// Severity is the severity of this check's failures; its warnings are
	// always SeverityWarning.
	Severity Severity
}

// SeverityOf returns the severity of a finding of the check with status st: ""
// for ok and skipped.
func (c Check) SeverityOf(st Status) Severity {
	switch st {
	case StatusFail:
		return c.Severity
	case StatusWarn:
		return SeverityWarning
	}
	return ""
}

// Skip* are the messages of skips shared by many checks; callers may compare
// messages against them. (A probe failure has a reason, probes.Reason*;
// a finding that is skipped has one of these.)
const (
	SkipNoRDMADevice = "no RDMA device"
	// SkipNotRDMANode starts the reason every check gives on a node without
	// RDMA hardware that the plan does not list: a CPU-only node of a mixed
	// cluster, where a DaemonSet runs too.
	SkipNotRDMANode    = "not an RDMA node"
	SkipRDMAUnreadable = "the RDMA devices could not be read (see rdma_devices_readable)"
	SkipNoPlan         = "no cluster plan (--config.file)"
	SkipInfiniBand     = "InfiniBand port"
)

// SubjectNode is the subject of findings about the node as a whole.
const SubjectNode = "node"

type checkDef struct {
	Check
	// rootCause checks still run when the node has no RDMA device: they are the ones
	// that explain why.
	rootCause bool
	// needsPlan checks are skipped as a whole, with one finding, when there is no
	// plan or the plan does not know this node.
	needsPlan bool
	run       func(*env, *results)
}

// Checks returns every check in evaluation order.
func Checks() []Check {
	out := make([]Check, len(registry))
	for i, c := range registry {
		out[i] = c.Check
	}
	return out
}

// Run evaluates every check against one node's snapshot. plan may be nil: checks that
// need it are then skipped with SkipNoPlan. node is this node's name in the plan.
func Run(snap *node.Snapshot, plan *config.Plan, nodeName string) []Finding {
	e := newEnv(snap, plan, nodeName)
	// The exporter runs this every scrape: one findings buffer serves every
	// check, and the output is sized for a finding per check and target.
	out := make([]Finding, 0, len(registry)*(len(e.targets)+1))
	r := &results{quote: nameQuoter(snap, e.planNames())}
	for _, def := range registry {
		r.id, r.check, r.out = def.ID, def.Check, r.out[:0]
		switch {
		case e.snap == nil:
			r.skip(SubjectNode, Textf("no snapshot of this node was taken"))
		case !e.notRDMANode.Empty():
			r.skip(SubjectNode, e.notRDMANode)
		case e.rdmaUnknown && !def.rootCause:
			r.skip(SubjectNode, Textf(SkipRDMAUnreadable))
		case e.noRDMA && !def.rootCause:
			r.skip(SubjectNode, Textf(SkipNoRDMADevice))
		case def.needsPlan && !e.planReason.Empty():
			r.skip(SubjectNode, e.planReason)
		default:
			def.run(e, r)
		}
		slices.SortStableFunc(r.out, func(a, b Finding) int { return naturalCompare(a.Subject, b.Subject) })
		out = append(out, r.out...)
	}
	return out
}

// results collects one check's findings.
type results struct {
	id    string
	check Check
	out   []Finding
	// quote shell-quotes the node's unsafe names in a fix; nil when none is.
	quote *strings.Replacer
}

// add records a finding. ok and skip take no fix: one on a passing finding would
// read as "something is wrong". Names from the node may hold any bytes: every
// name in the fix is shell-quoted, escape sequences and control characters
// are removed from the message and fix, and both are made valid UTF-8 here; the subject stays the name itself,
// so that it matches the interface and device names of the snapshot (and its
// label is the one the interface's own series carry); whoever prints it writes
// it with node.LabelUTF8.
func (r *results) add(subject string, st Status, msg, fix Text) {
	fixEnglish := fix.String()
	if r.quote != nil && fixEnglish != "" {
		fixEnglish = r.quote.Replace(fixEnglish)
		fix = fix.MapStrings(r.quote.Replace)
	}
	r.out = append(r.out, Finding{ID: r.id, Subject: subject, Status: st,
		Message: node.ValidUTF8(node.Printable(msg.String())), Fix: node.ValidUTF8(node.Printable(fixEnglish)),
		Severity: r.check.SeverityOf(st), MessageText: msg, FixText: fix})
}

func (r *results) ok(subject string, msg Text)        { r.add(subject, StatusOK, msg, Text{}) }
func (r *results) skip(subject string, msg Text)      { r.add(subject, StatusSkipped, msg, Text{}) }
func (r *results) warn(subject string, msg, fix Text) { r.add(subject, StatusWarn, msg, fix) }
func (r *results) fail(subject string, msg, fix Text) { r.add(subject, StatusFail, msg, fix) }

// naturalCompare orders subjects in rail order (node.NaturalCompare).
func naturalCompare(a, b string) int { return node.NaturalCompare(a, b) }
