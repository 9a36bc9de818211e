package parse

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// NCCLMeasurement is one placement (out-of-place or in-place) of a row.
type NCCLMeasurement struct {
	TimeSeconds         float64
	AlgBWBytesPerSecond float64
	BusBWBytesPerSecond float64
	// Wrong is the #wrong element count, -1 when not reported: validation
	// off (-c 0, printed N/A) or the old format, whose column is MaxError.
	Wrong int64
	// MaxError is the old (<= 2.11) `error` column, a maximum relative
	// error rather than a count; -1 when absent or N/A.
	MaxError float64
}

// NCCLRow is one message size (and type/op) of an nccl-tests table.
type NCCLRow struct {
	SizeBytes  uint64
	Count      uint64
	Type       string
	RedOp      string // "" in the old all_gather format, which had no redop column
	Root       int    // -1 for collectives without a root
	OutOfPlace NCCLMeasurement
	InPlace    NCCLMeasurement
}

// NCCLDevice is one "# Rank N ... on HOST device D" line.
type NCCLDevice struct {
	Rank   int
	Host   string
	Device int
}

// NCCLResult is what one nccl-tests run reported.
type NCCLResult struct {
	Version     string // nccl-tests version, from its first line (>= 2.17.4)
	NCCLVersion string // NCCL library version, e.g. "2.23.4"
	Collective  string // e.g. "all_reduce_perf" (>= 2.16.7 prints it)
	NRanks      int
	Devices     []NCCLDevice
	Rows        []NCCLRow
	// AvgBusBandwidthBytesPerSecond is nccl-tests' own "Avg bus bandwidth"
	// summary, which averages the in-place bus bandwidth over all sizes. It is
	// kept for reference only: the tiny, latency-bound sizes pull it far below
	// what the links carry, so runs are judged on LargeMessageBusBandwidth.
	AvgBusBandwidthBytesPerSecond float64
	// HasAverage says whether the summary printed a usable average.
	HasAverage bool
	// AvgBusBandwidthFailed is set when NCCL_TESTS_MIN_BW was given and the
	// average missed 90% of it.
	AvgBusBandwidthFailed bool
	// Complete is set when the run printed its closing summary; rows without
	// it come from a run that was cut short.
	Complete          bool
	OutOfBoundsCount  int64
	OutOfBoundsFailed bool
	// Duplicated means several independent processes each printed a whole
	// test: a binary built without MPI=1 started by mpirun. Its numbers are
	// single-process numbers and say nothing about the network.
	Duplicated bool
	// Impossible is set when a printed bus bandwidth is above any hardware
	// (maxNCCLBusBytesPerSecond): the output is corrupt and no number of it
	// can be trusted.
	Impossible bool
	Warnings   []string // NCCL WARN lines
	Errors     []string
	Reason     string
}

var (
	// Open MPI --tag-output (and --timestamp-output) prefixes.
	ncclTagRe       = regexp.MustCompile(`^.*?\[\d+,\d+\]<std(?:out|err)>:`)
	ncclVersionRe   = regexp.MustCompile(`^#\s*nccl-tests version\s+(\S+)(?:.*nccl-library=(\d+))?`)
	ncclLibraryRe   = regexp.MustCompile(`\bNCCL version\s+(\d+\.\d+\.\d+)`)
	ncclStartRe     = regexp.MustCompile(`^#\s*Collective test starting:\s*(\S+)`)
	ncclRankRe      = regexp.MustCompile(`^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)`)
	ncclOOBRe       = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?`)
	ncclAvgRe       = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?`)
	ncclErrorLineRe = regexp.MustCompile(`^#\s*error:\s*(.+)`)

	ncclNoDeviceRe = regexp.MustCompile(`NET/IB\s*:\s*No device found`)
	ncclRefusedRe  = regexp.MustCompile(`Connection refused`)
	ncclModifyQPRe = regexp.MustCompile(`ibv_modify_qp failed`)
	ncclEINVALRe   = regexp.MustCompile(`EINVAL|Invalid argument|failed with 22\b`)
	// NCCL >= 2.19 prints "failed with 110 Connection timed out", older ones
	// "failed with error Connection timed out".
	ncclTimedOutRe = regexp.MustCompile(`Connection timed out|ETIMEDOUT|failed with 110\b`)
	ncclRetryRe    = regexp.MustCompile(`status=12\b|status=[A-Za-z][^()=\n]*\(12\)|with error 12\b|(?i:retry (?:counter )?exceeded)`)
	ncclTimeoutRe  = regexp.MustCompile(`Test timeout`)
	ncclTestFailRe = regexp.MustCompile(`Test (?:NCCL |CUDA )?failure|Invalid number of GPUs|mpirun (?:detected|noticed)|Primary job\s+terminated`)
	ncclWarnLineRe = regexp.MustCompile(`\bNCCL WARN\b`)
	ncclRootRe     = regexp.MustCompile(`^-?\d+$`)
)

// ncclPlacementLen is the number of values per placement: time, algbw,
// busbw and #wrong (or the old error column).
const ncclPlacementLen = 4

// ncclLayout is what the column header says about the rows that follow.
type ncclLayout struct {
	known    bool
	hasRoot  bool
	oldError bool // float "error" column instead of "#wrong"
	perPlace int  // values per placement (8 with -I per-iteration columns)
}

// NCCL parses the text output of an nccl-tests binary. It returns a
// non-nil result whenever the output could be read; when no row was found
// the error wraps ErrNoResults and Reason says why.
func NCCL(r io.Reader) (*NCCLResult, error) {
	data, err := readLimited(r)
	if err != nil {
		return nil, err
	}
	return parseNCCLText(string(data))
}

func parseNCCLText(text string) (*NCCLResult, error) {
	res := &NCCLResult{}
	var warnings, errs messageList
	var otherLines []string
	layout := ncclLayout{perPlace: ncclPlacementLen}
	var headers, summaries, starts, rankZero int
	maxRank := -1
	sawAvg, sawOOB := false, false
	var seen outputSeen

	for _, raw := range splitLines(text) {
		line := raw
		if strings.Contains(raw, ">:") {
			line = ncclTagRe.ReplaceAllString(raw, "")
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			known := true
			switch {
			case strings.HasPrefix(line, "# nThread") || strings.HasPrefix(line, "#nThread"):
				headers++
			case strings.Contains(line, "Collective test starting"):
				if m := ncclStartRe.FindStringSubmatch(line); m != nil {
					starts++
					if res.Collective == "" {
						res.Collective = m[1]
					}
				}
			case strings.Contains(line, "nccl-tests version"):
				if m := ncclVersionRe.FindStringSubmatch(line); m != nil {
					res.Version = m[1]
					if m[2] != "" {
						res.NCCLVersion = ncclVersionString(atoiOr(m[2], 0))
					}
				}
			case strings.Contains(line, "Rank"):
				if m := ncclRankRe.FindStringSubmatch(line); m != nil {
					d := NCCLDevice{Rank: atoiOr(m[1], 0), Host: m[2], Device: atoiOr(m[3], 0)}
					if d.Rank == 0 {
						rankZero++
					}
					maxRank = max(maxRank, d.Rank)
					res.Devices = append(res.Devices, d)
				}
			case strings.Contains(line, "Out of bounds"):
				if m := ncclOOBRe.FindStringSubmatch(line); m != nil {
					summaries++
					if !sawOOB {
						sawOOB = true
						res.OutOfBoundsCount, _ = strconv.ParseInt(m[1], 10, 64)
					}
					res.OutOfBoundsFailed = res.OutOfBoundsFailed || m[2] == "FAILED" || m[1] != "0"
				}
			case strings.Contains(line, "Avg bus bandwidth"):
				if m := ncclAvgRe.FindStringSubmatch(line); m != nil {
					res.Complete = true
					v, err := strconv.ParseFloat(m[1], 64)
					switch bw := ncclGBToBytesPerSecond(v); {
					case err != nil || !finite(v) || v < 0 || sawAvg:
					case bw > maxNCCLBusBytesPerSecond:
						res.Impossible = true
						errs.add("impossible average bus bandwidth: " + line)
					default:
						sawAvg = true
						res.AvgBusBandwidthBytesPerSecond, res.HasAverage = bw, true
					}
					res.AvgBusBandwidthFailed = res.AvgBusBandwidthFailed || m[2] == "FAILED"
				}
			case strings.Contains(line, "error:"):
				if m := ncclErrorLineRe.FindStringSubmatch(line); m != nil {
					errs.add(m[1])
					otherLines = append(otherLines, line)
				}
			case isNCCLColumnHeader(line):
				layout = parseNCCLColumnHeader(line)
			default:
				known = false
			}
			seen.recognized = seen.recognized || known
			continue
		}
		switch row, status := parseNCCLRow(line, layout); status {
		case rowParsed:
			res.Rows = append(res.Rows, row)
			continue
		case rowInvalid:
			seen.unreadable = true
			warnings.add("ignored result row with an invalid number: " + line)
			continue
		case rowImpossible:
			res.Impossible = true
			errs.add("impossible bus bandwidth (above any network or NVLink port): " + line)
			continue
		}
		if m := ncclLibraryRe.FindStringSubmatch(line); m != nil {
			seen.recognized = true
			if res.NCCLVersion == "" {
				res.NCCLVersion = m[1]
			}
		}
		otherLines = append(otherLines, line)
		switch {
		case ncclWarnLineRe.MatchString(line):
			warnings.add(line)
			seen.recognized = true
		case ncclTestFailRe.MatchString(line) || ncclTimeoutRe.MatchString(line):
			errs.add(line)
			seen.recognized = true
		case strings.Contains(line, "NCCL INFO"):
			seen.recognized = true
		}
	}

	res.NRanks = maxRank + 1
	res.Duplicated = headers > 1 || starts > 1 || summaries > 1 || rankZero > 1
	res.Warnings, res.Errors = warnings.list(), errs.list()
	res.Reason = classifyNCCL(res, otherLines, seen)
	if len(res.Rows) == 0 {
		return res, fmt.Errorf("nccl-tests (%s): %w", res.Reason, ErrNoResults)
	}
	return res, nil
}

// NCCLLargeMessage is the bus bandwidth a run is judged on.
type NCCLLargeMessage struct {
	BytesPerSecond float64
	// SizeBytes is the message size it was measured at.
	SizeBytes uint64
	// Fallback: no size reached the threshold, so the largest one was used.
	Fallback bool
}

// NCCLFallbackNote says that a run was judged on its largest size because
// no size reached the threshold.
func NCCLFallbackNote(threshold, largest uint64) string {
	return fmt.Sprintf("no message size reached large_message_bytes (%d bytes): judged on the largest size, %d bytes, whose bus bandwidth may still be latency-bound; sweep up to at least the threshold (max_bytes)", threshold, largest)
}

// LargeMessageBusBandwidth is the best (in-place) bus bandwidth among the
// message sizes of at least threshold bytes, or that of the largest size
// when none reaches it. Small sizes are latency-bound: nccl-tests' average
// over all of them is a fraction of what the links carry (2x8 A100: 66.5
// against 237.5 GB/s), so a floor or a baseline on it judges latency, and
// a healthy cluster fails a floor set from the links' speed. ok is false
// without rows.
func (r *NCCLResult) LargeMessageBusBandwidth(threshold uint64) (lm NCCLLargeMessage, ok bool) {
	var largest NCCLRow
	for i, row := range r.Rows {
		bw := row.busBandwidth()
		if row.SizeBytes >= threshold && (!ok || bw > lm.BytesPerSecond) {
			lm, ok = NCCLLargeMessage{BytesPerSecond: bw, SizeBytes: row.SizeBytes}, true
		}
		if i == 0 || row.SizeBytes > largest.SizeBytes {
			largest = row
		}
	}
	if ok || len(r.Rows) == 0 {
		return lm, ok
	}
	return NCCLLargeMessage{BytesPerSecond: largest.busBandwidth(), SizeBytes: largest.SizeBytes, Fallback: true}, true
}

// BusBandwidthBySize is the in-place bus bandwidth of every message size
// (out-of-place where a JSON file had no valid in-place numbers).
func (r *NCCLResult) BusBandwidthBySize() map[uint64]float64 {
	bw := make(map[uint64]float64, len(r.Rows))
	for _, row := range r.Rows {
		bw[row.SizeBytes] = row.busBandwidth()
	}
	return bw
}

// busBandwidth is the in-place bus bandwidth, which nccl-tests' own
// average uses too, or the out-of-place one when the in-place placement
// was not measured (a NaN in a JSON file; a real run never times 0 µs).
func (row NCCLRow) busBandwidth() float64 {
	if row.InPlace.TimeSeconds == 0 && row.InPlace.BusBWBytesPerSecond == 0 {
		return row.OutOfPlace.BusBWBytesPerSecond
	}
	return row.InPlace.BusBWBytesPerSecond
}

// WrongResults adds up the wrong elements of every row, both placements,
// and the out-of-bounds values.
func (r *NCCLResult) WrongResults() int64 {
	n := r.OutOfBoundsCount
	for _, row := range r.Rows {
		n += max(row.InPlace.Wrong, 0) + max(row.OutOfPlace.Wrong, 0)
	}
	return n
}

func isNCCLColumnHeader(line string) bool {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	return len(f) >= 4 && f[0] == "size" && f[1] == "count" && strings.Contains(line, "busbw")
}

func parseNCCLColumnHeader(line string) ncclLayout {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	l := ncclLayout{known: true, perPlace: ncclPlacementLen}
	for _, w := range f {
		switch w {
		case "root":
			l.hasRoot = true
		case "error":
			l.oldError = true
		case "i_min":
			l.perPlace = 2 * ncclPlacementLen
		}
	}
	return l
}

// parseNCCLRow reads "size count type [redop] [root] (time algbw busbw
// wrong [i_min i_max i_p99 i_cv%]){1,2} [timestamp]". Column positions come
// from the header when one was seen; otherwise from the number of values.
func parseNCCLRow(line string, layout ncclLayout) (NCCLRow, rowStatus) {
	f := strings.Fields(line)
	if len(f) < 3+ncclPlacementLen {
		return NCCLRow{}, rowNone
	}
	size, err1 := strconv.ParseUint(f[0], 10, 64)
	count, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || !isWord(f[2]) {
		return NCCLRow{}, rowNone
	}
	row := NCCLRow{SizeBytes: size, Count: count, Type: f[2], Root: -1}
	// The old all_gather format has no redop column; a word here is one.
	i := 3
	if isWord(f[i]) {
		row.RedOp = f[i]
		i++
	}
	// Values run until the first token that is neither a number nor N/A
	// (the -S timestamp, or trailing garbage).
	var vals []string
	for _, t := range f[i:] {
		if t != "N/A" && !isNumber(t) {
			break
		}
		vals = append(vals, t)
	}
	per := layout.perPlace
	hasRoot := layout.hasRoot
	if !layout.known {
		hasRoot = len(vals)%per == 1
	}
	if hasRoot {
		if len(vals) == 0 || !ncclRootRe.MatchString(vals[0]) {
			return NCCLRow{}, rowInvalid
		}
		row.Root = atoiOr(vals[0], -1)
		vals = vals[1:]
	}
	switch {
	case len(vals) >= 2*per:
		out, ok1 := parseNCCLMeasurement(vals[:per], layout.oldError)
		in, ok2 := parseNCCLMeasurement(vals[per:2*per], layout.oldError)
		if !ok1 || !ok2 {
			return NCCLRow{}, rowInvalid
		}
		row.OutOfPlace, row.InPlace = out, in
	case len(vals) >= per:
		// Trace-replay rows print only the in-place block.
		in, ok := parseNCCLMeasurement(vals[:per], layout.oldError)
		if !ok {
			return NCCLRow{}, rowInvalid
		}
		row.OutOfPlace = NCCLMeasurement{Wrong: -1, MaxError: -1}
		row.InPlace = in
	default:
		return NCCLRow{}, rowInvalid
	}
	if !row.plausible() {
		return NCCLRow{}, rowImpossible
	}
	return row, rowParsed
}

// plausible rejects a bus bandwidth no hardware reaches. Only busbw is
// bounded: algbw of a single rank is a local memory copy and may be faster
// than any link.
func (row NCCLRow) plausible() bool {
	return row.OutOfPlace.BusBWBytesPerSecond <= maxNCCLBusBytesPerSecond &&
		row.InPlace.BusBWBytesPerSecond <= maxNCCLBusBytesPerSecond
}

// newNCCLMeasurement converts time (µs), algbw and busbw (GB/s, 10^9 B)
// as nccl-tests prints them in text and JSON; the wrong and error columns
// start out absent.
func newNCCLMeasurement(timeUsec, algBW, busBW float64) NCCLMeasurement {
	return NCCLMeasurement{
		TimeSeconds:         usecToSeconds(timeUsec),
		AlgBWBytesPerSecond: ncclGBToBytesPerSecond(algBW),
		BusBWBytesPerSecond: ncclGBToBytesPerSecond(busBW),
		Wrong:               -1,
		MaxError:            -1,
	}
}

// ncclWrongCount turns a finite, non-negative #wrong value into a count.
func ncclWrongCount(w float64) int64 { return int64(math.Min(w, math.MaxInt64/2)) }

// parseNCCLMeasurement reads time, algbw, busbw and the wrong/error
// column. Numbers may be in %g or %.1e form ("1.2e+05").
func parseNCCLMeasurement(v []string, oldError bool) (NCCLMeasurement, bool) {
	nums, ok := parseFloats(v[:3])
	if !ok {
		return NCCLMeasurement{}, false
	}
	m := newNCCLMeasurement(nums[0], nums[1], nums[2])
	if v[3] == "N/A" {
		return m, true
	}
	w, ok := parseFloats(v[3:4])
	if !ok {
		return m, false
	}
	if oldError {
		m.MaxError = w[0]
	} else {
		m.Wrong = ncclWrongCount(w[0])
	}
	return m, true
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// isWord matches type and redop names (float, int8, bfloat16, sum, none).
func isWord(s string) bool {
	if s == "" || isNumber(s) || s == "N/A" {
		return false
	}
	c := s[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ncclVersionString turns NCCL_VERSION_CODE into "major.minor.patch": the
// code is major*10000+minor*100+patch since 2.9, major*1000+minor*100+patch
// before.
func ncclVersionString(code int) string {
	if code <= 0 {
		return ""
	}
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// classifyNCCL names the most specific cause. Transport causes come first:
// wrong data or low bandwidth is usually their consequence.
// Output that is not a run's (nothing of nccl-tests, NCCL or mpirun in it)
// is not_tool_output whatever words it holds: "Connection timed out" in a
// README is not a queue pair that timed out.
func classifyNCCL(res *NCCLResult, lines []string, seen outputSeen) string {
	if !seen.recognized && len(res.Rows) == 0 && !res.Impossible {
		return seen.noResultsReason(false)
	}
	var noDevice, refused, gid, qpTimeout, retry, timeout bool
	for _, l := range lines {
		noDevice = noDevice || ncclNoDeviceRe.MatchString(l)
		// NCCL's bootstrap logs "Call to connect returned Connection
		// refused, retrying" while peers are still starting; only a refusal
		// it gave up on is a failure.
		refused = refused || ncclRefusedRe.MatchString(l) && !strings.Contains(l, "retrying")
		if ncclModifyQPRe.MatchString(l) {
			gid = gid || ncclEINVALRe.MatchString(l)
			qpTimeout = qpTimeout || ncclTimedOutRe.MatchString(l)
		}
		retry = retry || ncclRetryRe.MatchString(l)
		timeout = timeout || ncclTimeoutRe.MatchString(l)
	}
	wrong := res.OutOfBoundsFailed
	for _, r := range res.Rows {
		wrong = wrong || r.OutOfPlace.Wrong > 0 || r.InPlace.Wrong > 0
	}
	switch {
	case noDevice:
		// NCCL then silently falls back to TCP sockets: for a RoCE probe
		// that is a failure even if the test completed.
		return ReasonNoDevice
	case refused:
		return ReasonConnectRefused
	case gid:
		return ReasonGIDIndex
	case qpTimeout:
		return ReasonQPConnectTimeout
	case retry:
		return ReasonRetryExceeded
	case timeout:
		return ReasonTimeout
	case res.Impossible:
		return ReasonParseError
	case wrong:
		return ReasonWrongResults
	case res.AvgBusBandwidthFailed:
		return ReasonBelowThreshold
	case res.Duplicated:
		return ReasonExecError
	case len(res.Rows) == 0:
		return seen.noResultsReason(len(res.Errors) > 0)
	case len(res.Errors) > 0:
		return ReasonExecError
	case !res.Complete:
		return ReasonIncompleteOutput
	}
	return ""
}

// NCCLExitReason maps an nccl-tests exit status to a reason. Since v2.17.3
// the binary exits 7 both for wrong results and for missing
// NCCL_TESTS_MIN_BW; without the output, 7 is reported as wrong_results
// (use NCCLFailureReason to tell them apart). Up to v2.17.2 both cases
// exited 1, which therefore only says exec_error.
func NCCLExitReason(code int) string {
	switch code {
	case 0:
		return ""
	case 4: // testTimeout
		return ReasonTimeout
	case 7: // testNumResults
		return ReasonWrongResults
	}
	// 1 internal, 2 CUDA, 3 NCCL, 5 not implemented, 6 invalid usage, and
	// anything mpirun or a signal produced.
	return ReasonExecError
}

// NCCLFailureReason combines the exit status with the parsed output (nil
// when there was none). The output's reason wins because it is more
// specific, except that a generic exec_error defers to a timeout exit,
// output that stopped early or could not be read defers to a failing exit
// (the exit says why), and an exit 7 whose output shows only a missed
// NCCL_TESTS_MIN_BW is below_threshold.
func NCCLFailureReason(exitCode int, res *NCCLResult) string {
	fromExit := NCCLExitReason(exitCode)
	if res == nil {
		return fromExit
	}
	switch {
	case res.Reason == "":
		if exitCode == 7 && res.AvgBusBandwidthFailed {
			return ReasonBelowThreshold
		}
		return fromExit
	case res.Reason == ReasonExecError && fromExit == ReasonTimeout:
		return ReasonTimeout
	}
	return preferExit(res.Reason, res.Impossible, fromExit)
}
