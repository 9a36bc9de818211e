package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PerftestJSON parses a perftest --out_json file: the standard JSON
// written since perftest 24.01 as well as the earlier form with unquoted
// keys and values.
//
// The file does not say which unit its bandwidth is in (it follows
// --report_gbits). The unit is inferred from MsgRate × MsgSize, which is
// ~119 times apart between MiB/s and Gb/s; when that is impossible (no
// message rate) MiB/s, perftest's default, is assumed and a warning is
// added. Callers that know the flags should use PerftestJSONUnit.
func PerftestJSON(data []byte) (*PerftestResult, error) {
	return parsePerftestJSON(data, "")
}

// PerftestJSONUnit is PerftestJSON with the unit given, as the
// runner knows whether it passed --report_gbits.
func PerftestJSONUnit(data []byte, unit PerftestUnit) (*PerftestResult, error) {
	if _, err := unit.BytesPerSecond(0); err != nil {
		return nil, err
	}
	return parsePerftestJSON(data, unit)
}

func parsePerftestJSON(data []byte, unit PerftestUnit) (*PerftestResult, error) {
	res := &PerftestResult{GIDIndex: -1, Reason: ReasonParseError}
	if len(data) > MaxOutputBytes {
		return res, fmt.Errorf("perftest JSON larger than %d bytes", MaxOutputBytes)
	}
	doc, err := decodePerftestJSON(data)
	if err != nil {
		return res, fmt.Errorf("could not parse perftest JSON: %w", err)
	}
	if _, ok := doc["results"]; !ok {
		if _, ok := doc["test_info"]; !ok {
			res.Reason = ReasonNotToolOutput
			return res, fmt.Errorf("JSON without perftest's test_info or results: %w", ErrNoResults)
		}
	}
	info, results := doc.section("test_info"), doc.section("results")

	res.Test = info.str("test")
	res.Device = info.str("Device")
	res.LinkType = info.str("Link_type")
	res.GIDIndex = info.int("GID_index", -1)
	res.MTU = info.int("Mtu", 0)
	res.NumQPs = info.int("Number_of_qps", 0)

	size := results.uint("MsgSize")
	iters := results.uint("n_iterations")
	var warnings messageList
	switch {
	case results.has("t_avg") || results.has("avg_lat"):
		avg := results.num("t_avg")
		if !results.has("t_avg") {
			avg = results.num("avg_lat")
		}
		row := PerftestLatencyRow{
			Bytes: size, Iterations: iters,
			Min: usecToSeconds(results.num("t_min")), Max: usecToSeconds(results.num("t_max")),
			Typical: usecToSeconds(results.num("t_typical")), Avg: usecToSeconds(avg),
			Stdev: usecToSeconds(results.num("t_stdev")),
			P99:   usecToSeconds(results.num("percentile_99")), P999: usecToSeconds(results.num("percentile_99.9")),
		}
		if allFiniteNonNegative(row.Min, row.Max, row.Typical, row.Avg, row.Stdev, row.P99, row.P999) {
			res.LatencyRows = append(res.LatencyRows, row)
		} else {
			warnings.add("ignored JSON result with an invalid latency")
		}
	case results.has("BW_average") || results.has("bw_avg"):
		avg := results.num("BW_average")
		if !results.has("BW_average") {
			avg = results.num("bw_avg")
		}
		peak, rate := results.num("BW_peak"), results.num("MsgRate")
		if unit == "" {
			var inferred bool
			unit, inferred = inferPerftestUnit(avg, rate, size)
			if !inferred {
				warnings.add("bandwidth unit not stated in the JSON and not inferable from MsgRate; assumed MiB/s")
			}
		}
		res.Unit = unit
		peakBps, _ := unit.BytesPerSecond(peak)
		avgBps, _ := unit.BytesPerSecond(avg)
		switch {
		case !allFiniteNonNegative(avgBps, peakBps, rate):
			warnings.add("ignored JSON result with an invalid bandwidth")
		case !plausiblePerftest(avgBps, peakBps):
			res.Impossible = true
			res.Errors = append(res.Errors, fmt.Sprintf("impossible bandwidth %g %s (above any port's rate)", avg, unit))
		default:
			res.Rows = append(res.Rows, PerftestRow{Bytes: size, Iterations: iters, BWPeak: peakBps, BWAverage: avgBps, MsgRateMpps: rate})
		}
	}
	res.Warnings = warnings.list()
	res.BandwidthBytesPerSecond = headlineBandwidth(res.Rows)
	if len(res.Rows) == 0 && len(res.LatencyRows) == 0 {
		return res, fmt.Errorf("could not parse perftest JSON: %w", ErrNoResults)
	}
	res.Reason = ""
	return res, nil
}

// inferPerftestUnit tells MiB/s from Gb/s by comparing the bandwidth with
// MsgRate × MsgSize (bytes/s): the ratio is 2^-20 ≈ 9.5e-7 for MiB/s and
// 8e-9 for Gb/s. Bidirectional runs double both sides, so it still holds.
func inferPerftestUnit(avg, rateMpps float64, size uint64) (PerftestUnit, bool) {
	bytesPerSecond := rateMpps * 1e6 * float64(size)
	if !(avg > 0) || !(bytesPerSecond > 0) || !finite(avg) || !finite(bytesPerSecond) {
		return UnitMiB, false
	}
	midpoint := math.Sqrt(1.0 / bytesPerMiB / bytesPerGbit)
	if avg/bytesPerSecond > midpoint {
		return UnitMiB, true
	}
	return UnitGb, true
}

// perftestDoc holds the scalar values of each section as the text perftest
// printed, so the standard and the unquoted form are read the same way.
type perftestDoc map[string]perftestSection

type perftestSection map[string]string

func (d perftestDoc) section(name string) perftestSection {
	if s, ok := d[name]; ok {
		return s
	}
	return perftestSection{}
}

func (s perftestSection) has(key string) bool { _, ok := s[key]; return ok }
func (s perftestSection) str(key string) string {
	return s[key]
}

func (s perftestSection) num(key string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s[key]), 64)
	if err != nil {
		return 0
	}
	return v
}

func (s perftestSection) int(key string, fallback int) int {
	if !s.has(key) {
		return fallback
	}
	return atoiOr(strings.TrimSpace(s[key]), fallback)
}

func (s perftestSection) uint(key string) uint64 {
	v, err := strconv.ParseUint(strings.TrimSpace(s[key]), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func decodePerftestJSON(data []byte) (perftestDoc, error) {
	var std map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &std); err == nil {
		doc := perftestDoc{}
		for name, fields := range std {
			sec := perftestSection{}
			for k, raw := range fields {
				sec[k] = rawScalar(raw)
			}
			doc[name] = sec
		}
		return doc, nil
	}
	// Not standard JSON: pre-24.01 output, or a later file broken by one
	// unquoted key (the QoS "sl:" bug). Read it leniently.
	return parseLenientObject(string(data))
}

func rawScalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

// maxLenientDepth bounds nesting; perftest writes two levels.
const maxLenientDepth = 8

// lenientScanner reads the "key: value," structure perftest wrote before
// 24.01, where neither keys nor string values are quoted.
type lenientScanner struct {
	s string
	i int
}

func parseLenientObject(s string) (perftestDoc, error) {
	sc := &lenientScanner{s: s}
	sc.skipSpace()
	if sc.peek() != '{' {
		return nil, errors.New("not an object")
	}
	sc.i++
	doc := perftestDoc{}
	top := perftestSection{}
	if err := sc.object(doc, top, 0); err != nil {
		return nil, err
	}
	if len(top) > 0 {
		doc[""] = top
	}
	if len(doc) == 0 {
		return nil, errors.New("no key/value pairs found")
	}
	return doc, nil
}

// object reads pairs until the closing brace or the end of input. Nested
// objects become sections of doc; deeper levels are flattened into the
// section of their top-level parent.
func (sc *lenientScanner) object(doc perftestDoc, into perftestSection, depth int) error {
	if depth > maxLenientDepth {
		return errors.New("objects nested too deeply")
	}
	for {
		sc.skipSpaceAndCommas()
		if sc.i >= len(sc.s) {
			return nil
		}
		if sc.peek() == '}' {
			sc.i++
			return nil
		}
		start := sc.i
		key := sc.token(":{},\n")
		sc.skipSpace()
		if sc.peek() != ':' {
			if sc.i == start {
				return fmt.Errorf("unexpected %q at offset %d", sc.peek(), sc.i)
			}
			continue // a stray word without a value: skip it
		}
		sc.i++
		sc.skipSpace()
		switch sc.peek() {
		case '{':
			sc.i++
			sec := into
			if depth == 0 {
				sec = perftestSection{}
				doc[key] = sec
			}
			if err := sc.object(doc, sec, depth+1); err != nil {
				return err
			}
		case '[':
			sc.skipBracketed()
		default:
			into[key] = sc.token(",}\n")
		}
	}
}

// token reads a quoted string or a bare word up to one of stops.
func (sc *lenientScanner) token(stops string) string {
	if sc.peek() == '"' {
		end := sc.i + 1
		for end < len(sc.s) && sc.s[end] != '"' {
			if sc.s[end] == '\\' {
				end++
			}
			end++
		}
		quoted := sc.s[sc.i:min(end+1, len(sc.s))]
		sc.i = min(end+1, len(sc.s))
		if v, err := strconv.Unquote(quoted); err == nil {
			return v
		}
		return strings.Trim(quoted, `"`)
	}
	start := sc.i
	for sc.i < len(sc.s) && !strings.ContainsRune(stops, rune(sc.s[sc.i])) {
		sc.i++
	}
	return strings.TrimSpace(sc.s[start:sc.i])
}

func (sc *lenientScanner) skipBracketed() {
	depth := 0
	for ; sc.i < len(sc.s); sc.i++ {
		switch sc.s[sc.i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				sc.i++
				return
			}
		}
	}
}

func (sc *lenientScanner) peek() byte {
	if sc.i >= len(sc.s) {
		return 0
	}
	return sc.s[sc.i]
}

func (sc *lenientScanner) skipSpace() {
	for sc.i < len(sc.s) && strings.ContainsRune(" \t\r\n", rune(sc.s[sc.i])) {
		sc.i++
	}
}

func (sc *lenientScanner) skipSpaceAndCommas() {
	for sc.i < len(sc.s) && strings.ContainsRune(" \t\r\n,", rune(sc.s[sc.i])) {
		sc.i++
	}
}
