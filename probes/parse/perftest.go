package parse

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// PerftestRow is one bandwidth result line. Bandwidths are in bytes per
// second whatever unit perftest printed.
type PerftestRow struct {
	Bytes      uint64
	Iterations uint64
	// BWPeak is 0 when perftest did not measure a peak: in duration mode
	// (-D) and above 20000 iterations it prints 0.00.
	BWPeak      float64
	BWAverage   float64
	MsgRateMpps float64
}

// PerftestLatencyRow is one latency result line, in seconds. In duration
// mode (-D) perftest prints only the average, so the other fields stay 0.
type PerftestLatencyRow struct {
	Bytes      uint64
	Iterations uint64
	Min        float64
	Max        float64
	Typical    float64
	Avg        float64
	Stdev      float64
	P99        float64
	P999       float64
}

// PerftestResult is what one perftest run (ib_write_bw, ib_read_bw,
// ib_send_bw, ib_*_lat) reported.
type PerftestResult struct {
	Test     string // banner as printed, e.g. "RDMA_Write BW Test"
	Device   string
	LinkType string // "IB" or "Ethernet" (RoCE)
	GIDIndex int    // -1 when perftest used no GID (InfiniBand without -x)
	MTU      int
	NumQPs   int
	// Unit is the bandwidth unit perftest printed; rows are already
	// converted, it is kept to explain the numbers in logs.
	Unit        PerftestUnit
	Rows        []PerftestRow
	LatencyRows []PerftestLatencyRow
	// BandwidthBytesPerSecond is the average bandwidth of the row with the
	// largest message size (the last one when sizes repeat), the number a
	// link check compares with its threshold.
	BandwidthBytesPerSecond float64
	Warnings                []string
	Errors                  []string
	// Impossible is set when a printed bandwidth is above what one device's
	// ports can carry (maxPerftestBytesPerSecond): the output is corrupt.
	Impossible bool
	// Reason is "" for a run that produced results and no known failure,
	// otherwise one of the Reason* constants.
	Reason string
}

var (
	perftestBWHeaderRe = regexp.MustCompile(`BW (?:peak|average)\[([A-Za-z]+/sec)\]`)
	// Latency header with percentiles (iteration mode) and without (-D).
	perftestLatHeaderRe    = regexp.MustCompile(`t_min\[usec\]`)
	perftestLatDurHeaderRe = regexp.MustCompile(`t_avg\[usec\]`)

	perftestDeviceRe = regexp.MustCompile(`\bDevice\s*:\s*(\S+)`)
	perftestQPsRe    = regexp.MustCompile(`\bNumber of qps\s*:\s*(\d+)`)
	perftestLinkRe   = regexp.MustCompile(`\bLink type\s*:\s*(\S+)`)
	perftestGIDRe    = regexp.MustCompile(`\bGID index\s*:\s*(\d+)`)
	perftestMTURe    = regexp.MustCompile(`\bMtu\s*:\s*(\d+)`)

	perftestNoDeviceRe = regexp.MustCompile(`No IB devices found|IB device \S+ not found|Unable to find the Infiniband/RoCE device|Couldn't get context`)
	perftestConnectRe  = regexp.MustCompile(`Couldn't connect to|Unable to init the socket connection|Unable to open file descriptor for socket connection`)
	perftestGIDFailRe  = regexp.MustCompile(`Failed to modify QP(?: \d+)? to (?:RTR|INIT)|Incompatibility issue with GID types|Unable to Connect the HCA's through the link`)
	// "Failed status 12:" (<= 4.5) and "Failed status-transport retry
	// counter exceeded (12):" (HEAD) both carry the ibv_wc_status number.
	perftestStatusRe = regexp.MustCompile(`Failed status(?:\s+(\d+)|-[^(\n]*\((\d+)\))`)
	perftestRetryRe  = regexp.MustCompile(`(?i)transport retry counter exceeded`)
	perftestBelowRe  = regexp.MustCompile(`BW result is below bw limit|Msg rate\s+is below msg_rate limit`)
)

// Lower-case markers of the lines kept as warnings and errors. Plain
// substring checks: a regexp per line made parsing several times slower.
var (
	// perftestOwnWarnings are warnings only perftest prints; with "warning"
	// they are the warnings a perftest output is read for.
	perftestOwnWarnings  = []string{"conflicting cpu frequency", "requested sq size might be too big", "current tx depth is"}
	perftestWarningWords = append([]string{"warning"}, perftestOwnWarnings...)
	perftestErrorWords   = []string{"couldn't", "unable to", "failed", "error", "not found", "no ib devices", "incompatibility", "scnt="}
)

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// ibvWCRetryExceeded is IBV_WC_RETRY_EXC_ERR: the peer never acknowledged
// within the transport retry count, i.e. packets were lost on the path.
const ibvWCRetryExceeded = 12

type perftestTable int

const (
	tableNone perftestTable = iota
	tableBW
	tableLat
	tableLatDuration
)

// Perftest parses the text output of a perftest binary. It returns a
// non-nil result whenever the output could be read; when no result row was
// found the error wraps ErrNoResults and Reason says why.
func Perftest(r io.Reader) (*PerftestResult, error) {
	data, err := readLimited(r)
	if err != nil {
		return nil, err
	}
	return parsePerftestText(string(data))
}

func parsePerftestText(text string) (*PerftestResult, error) {
	res := &PerftestResult{GIDIndex: -1}
	var warnings, errs messageList
	var failureLines []string
	ownLine := false
	var seen outputSeen
	table := tableNone

	for _, raw := range splitLines(text) {
		line := strings.TrimSpace(raw)
		if line == "" || isRule(line) {
			continue
		}
		// Rows are recognised by position after the last table header, so
		// new header lines in later perftest versions do not matter.
		if strings.Contains(line, "/sec]") {
			if m := perftestBWHeaderRe.FindStringSubmatch(line); m != nil {
				if unit, ok := parsePerftestUnit(m[1]); ok {
					table, res.Unit = tableBW, unit
					continue
				}
			}
		}
		if strings.Contains(line, "[usec]") {
			if perftestLatHeaderRe.MatchString(line) {
				table = tableLat
				continue
			}
			if perftestLatDurHeaderRe.MatchString(line) {
				table = tableLatDuration
				continue
			}
		}
		switch parsePerftestRow(res, table, line) {
		case rowParsed:
			continue
		case rowInvalid:
			seen.unreadable = true
			warnings.add("ignored result row with an invalid number: " + line)
			continue
		case rowImpossible:
			res.Impossible = true
			errs.add("impossible bandwidth (above any port's rate): " + line)
			continue
		}
		if table == tableNone {
			parsePerftestBanner(res, line)
		}
		lower := strings.ToLower(line)
		ownLine = ownLine || perftestOwnLine(line, lower)
		switch {
		case containsAny(lower, perftestWarningWords):
			warnings.add(line)
		case containsAny(lower, perftestErrorWords):
			errs.add(line)
			failureLines = append(failureLines, line)
		}
	}

	res.Warnings, res.Errors = warnings.list(), errs.list()
	res.BandwidthBytesPerSecond = headlineBandwidth(res.Rows)
	// A banner or a table header makes it perftest's output, whatever else
	// is missing from it.
	seen.recognized = table != tableNone || res.Test != "" || res.Device != "" || res.LinkType != "" || ownLine
	if !seen.recognized && !res.Impossible && len(res.Rows)+len(res.LatencyRows) == 0 {
		// Lines with "error" or "failed" in a text that is not perftest's
		// are not the program's errors.
		res.Warnings, res.Errors = nil, nil
	}
	res.Reason = classifyPerftest(failureLines, len(res.Rows)+len(res.LatencyRows) > 0, res.Impossible, seen)
	if len(res.Rows) == 0 && len(res.LatencyRows) == 0 {
		return res, fmt.Errorf("perftest (%s): %w", res.Reason, ErrNoResults)
	}
	return res, nil
}

// perftestOwnLine reports a line only perftest prints: a failure to open
// the device, reach the peer's TCP port or connect the queue pair, a failed
// completion, or one of its warnings. A run that fails before its banner is
// still perftest's output; a text with "error" in it is not.
func perftestOwnLine(line, lower string) bool {
	return perftestNoDeviceRe.MatchString(line) || perftestConnectRe.MatchString(line) || perftestGIDFailRe.MatchString(line) ||
		perftestRetryRe.MatchString(line) || perftestStatusRe.MatchString(line) || perftestBelowRe.MatchString(line) ||
		containsAny(lower, perftestOwnWarnings)
}

// isRule matches perftest's separator lines (87 dashes) and the starred
// frame around the server's "Waiting for client to connect" banner.
func isRule(line string) bool {
	return strings.Trim(line, "-") == "" || strings.Trim(line, "*") == ""
}

// perftestBannerFields are the "Key : value" banner fields kept; the key
// text is checked before the regexp runs, as most lines have none of them.
var perftestBannerFields = []struct {
	key string
	re  *regexp.Regexp
	set func(*PerftestResult, string)
}{
	{"Device", perftestDeviceRe, func(r *PerftestResult, v string) { r.Device = v }},
	{"Number of qps", perftestQPsRe, func(r *PerftestResult, v string) { r.NumQPs = atoiOr(v, r.NumQPs) }},
	{"Link type", perftestLinkRe, func(r *PerftestResult, v string) { r.LinkType = v }},
	{"GID index", perftestGIDRe, func(r *PerftestResult, v string) { r.GIDIndex = atoiOr(v, r.GIDIndex) }},
	{"Mtu", perftestMTURe, func(r *PerftestResult, v string) { r.MTU = atoiOr(v, r.MTU) }},
}

func parsePerftestBanner(res *PerftestResult, line string) {
	if !strings.Contains(line, ":") {
		// The banner title is the only header line that is a bare phrase
		// ending in "Test" ("RDMA_Write BW Test", "Send Latency Test").
		if res.Test == "" && strings.HasSuffix(line, " Test") && len(line) < 80 {
			res.Test = line
		}
		return
	}
	for _, f := range perftestBannerFields {
		if !strings.Contains(line, f.key) {
			continue
		}
		if m := f.re.FindStringSubmatch(line); m != nil {
			f.set(res, m[1])
		}
	}
}

func atoiOr(s string, fallback int) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fallback
	}
	return v
}

type rowStatus int

const (
	rowNone rowStatus = iota
	rowParsed
	rowInvalid
	// rowImpossible: the numbers parse but one is a bandwidth no port reaches.
	rowImpossible
)

func parsePerftestRow(res *PerftestResult, table perftestTable, line string) rowStatus {
	f := strings.Fields(line)
	if table == tableNone || len(f) < 3 {
		return rowNone
	}
	size, err1 := strconv.ParseUint(f[0], 10, 64)
	iters, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return rowNone
	}
	nums, ok := parseFloats(f[2:])
	if !ok {
		return rowInvalid
	}
	switch table {
	case tableBW:
		// bytes, iterations, peak, average, msg rate (REPORT_FMT and
		// REPORT_FMT_EXT); --cpu_util appends a column, which is ignored.
		if len(nums) < 2 {
			return rowInvalid
		}
		peak, err := res.Unit.BytesPerSecond(nums[0])
		if err != nil {
			return rowInvalid
		}
		avg, _ := res.Unit.BytesPerSecond(nums[1])
		if !plausiblePerftest(peak, avg) {
			return rowImpossible
		}
		row := PerftestRow{Bytes: size, Iterations: iters, BWPeak: peak, BWAverage: avg}
		if len(nums) > 2 {
			row.MsgRateMpps = nums[2]
		}
		res.Rows = append(res.Rows, row)
	case tableLat:
		// t_min t_max t_typical t_avg t_stdev [99% 99.9%]
		if len(nums) < 5 {
			return rowInvalid
		}
		row := PerftestLatencyRow{
			Bytes: size, Iterations: iters,
			Min: usecToSeconds(nums[0]), Max: usecToSeconds(nums[1]), Typical: usecToSeconds(nums[2]),
			Avg: usecToSeconds(nums[3]), Stdev: usecToSeconds(nums[4]),
		}
		if len(nums) >= 7 {
			row.P99, row.P999 = usecToSeconds(nums[5]), usecToSeconds(nums[6])
		}
		res.LatencyRows = append(res.LatencyRows, row)
	case tableLatDuration:
		// t_avg, tps average
		res.LatencyRows = append(res.LatencyRows, PerftestLatencyRow{Bytes: size, Iterations: iters, Avg: usecToSeconds(nums[0])})
	}
	return rowParsed
}

// parseFloats parses every field as a finite, non-negative number: a
// negative or NaN bandwidth is a perftest bug (linux-rdma/perftest#82), not
// a measurement.
func parseFloats(fields []string) ([]float64, bool) {
	out := make([]float64, 0, len(fields))
	for _, s := range fields {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !finite(v) || v < 0 {
			return nil, false
		}
		out = append(out, v)
	}
	return out, len(out) > 0
}

// plausiblePerftest rejects bandwidths (bytes/s) no device can reach.
func plausiblePerftest(bws ...float64) bool {
	for _, bw := range bws {
		if bw > maxPerftestBytesPerSecond {
			return false
		}
	}
	return true
}

func headlineBandwidth(rows []PerftestRow) float64 {
	var best PerftestRow
	for i, r := range rows {
		if i == 0 || r.Bytes >= best.Bytes {
			best = r
		}
	}
	return best.BWAverage
}

// classifyPerftest names the first failure in the order a run goes through
// them (device, TCP exchange, QP connection, data path, verification),
// because a later symptom is usually caused by the earlier one. Output
// without results is the program's failure when it printed errors, a cut
// run when it printed only its banner, and unreadable (parse_error) when
// nothing in it was perftest's or its only rows had invalid numbers.
func classifyPerftest(lines []string, hasRows, impossible bool, seen outputSeen) string {
	if !seen.recognized && !hasRows && !impossible {
		return seen.noResultsReason(false)
	}
	var noDevice, connect, gid, retry, otherCompletion, below bool
	for _, l := range lines {
		noDevice = noDevice || perftestNoDeviceRe.MatchString(l)
		connect = connect || perftestConnectRe.MatchString(l)
		gid = gid || perftestGIDFailRe.MatchString(l)
		below = below || perftestBelowRe.MatchString(l)
		if perftestRetryRe.MatchString(l) {
			retry = true
		}
		if m := perftestStatusRe.FindStringSubmatch(l); m != nil {
			status := m[1] + m[2]
			if status == strconv.Itoa(ibvWCRetryExceeded) {
				retry = true
			} else {
				otherCompletion = true
			}
		}
	}
	switch {
	case noDevice:
		return ReasonNoDevice
	case connect:
		return ReasonConnectRefused
	case gid:
		return ReasonGIDIndex
	case retry:
		return ReasonRetryExceeded
	case impossible:
		return ReasonParseError
	case below:
		return ReasonBelowThreshold
	case otherCompletion:
		return ReasonExecError
	case hasRows:
		return ""
	}
	return seen.noResultsReason(len(lines) > 0)
}

// PerftestFailureReason combines the exit status of a perftest run with its
// parsed output (nil when nothing could be read, err the parser's error):
// the output's reason when it names one, unless it is only unreadable or
// cut short and the program failed, which the exit says better; exec_error
// for a failing exit or output without results; "" for a run that measured.
func PerftestFailureReason(exitCode int, res *PerftestResult, err error) string {
	if res != nil && res.Reason != "" {
		exitReason := ""
		if exitCode != 0 {
			exitReason = ReasonExecError
		}
		return preferExit(res.Reason, res.Impossible, exitReason)
	}
	if err != nil || res == nil || exitCode != 0 {
		return ReasonExecError
	}
	return ""
}
