// Package parse reads what the probe programs print: perftest's text and
// JSON reports (ib_write_bw, ib_write_lat and their siblings), nccl-tests'
// text and JSON reports, and the NCCL_DEBUG=INFO lines in which NCCL says
// which transport it used. It classifies a failed run by what its output
// says, with the reasons below. Like node's kernel-format parsers it is pure:
// no I/O beyond the reader it is handed, no plan, no logging; the runners in
// probes run the programs and judge what this package reads.
package parse

import "errors"

// The failure reasons an output can show. They are values of the `reason`
// label of roce_probe_failure_info (probes lists them all, with the ones
// only a runner can judge): add new ones, never rename.
const (
	ReasonConnectRefused = "connect_refused"
	ReasonTimeout        = "timeout"
	ReasonNoDevice       = "no_device"
	ReasonGIDIndex       = "gid_index"
	ReasonRetryExceeded  = "retry_exceeded"
	ReasonWrongResults   = "wrong_results"
	ReasonBelowThreshold = "below_threshold"
	ReasonExecError      = "exec_error"
	// ReasonQPConnectTimeout: a queue pair never reached the peer (ibv_modify_qp to RTR
	// timed out). On RoCE that step resolves the peer's MAC address through the kernel's
	// neighbour table, so it fails on ARP, VLAN or routing problems of the compute
	// network, or a GID that points at an address the peer cannot reach.
	ReasonQPConnectTimeout = "qp_connect_timeout"
	// ReasonIncompleteOutput: the output has results but stops before the test's own
	// summary, so the run was cut short and its numbers may miss the largest sizes.
	ReasonIncompleteOutput = "incomplete_output"
	// ReasonParseError: nothing in the output could be read as the test's results, or a
	// number in it is impossible (a bandwidth above any port that exists).
	ReasonParseError = "parse_error"
	// ReasonNotToolOutput: nothing in the text is the program's own (no banner, table,
	// summary or log line of perftest, nccl-tests, NCCL or mpirun): a README, a shell
	// transcript, another program's output. Words such as "Connection timed out" in
	// such text say nothing about a fabric, so no failure is read from them.
	ReasonNotToolOutput = "not_tool_output"
)

// ErrNoResults is returned (wrapped) by the parsers when the output holds no
// measurement row. The parsers still return a result carrying the classified
// Reason, so a caller can report why the probe failed.
var ErrNoResults = errors.New("no result rows in probe output")

// preferExit picks between the reason an output gave and the one its exit
// status gives: output that stopped early or could not be read does not say
// why, and a failing exit does (the program failed, or timed out). An
// impossible number stays a parse error whatever the exit: the output
// itself is corrupt.
func preferExit(outputReason string, impossible bool, exitReason string) string {
	if exitReason != "" && !impossible && (outputReason == ReasonIncompleteOutput || outputReason == ReasonParseError || outputReason == ReasonNotToolOutput) {
		return exitReason
	}
	return outputReason
}
