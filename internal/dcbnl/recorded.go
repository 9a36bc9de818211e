package dcbnl

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

// maxRecorded bounds a recorded file; real ones are a few hundred bytes.
const maxRecorded = 1 << 20

// ParseRecorded reads a DCB state captured on another machine, so the
// exporter and the demo can replay a node without its NIC. Two text formats
// are accepted and told apart by content:
//
//  1. iproute2 `dcb` output: `dcb pfc show dev X` (optionally with -s for
//     requests/indications), optionally followed by `dcb app show dev X`,
//     `dcb ets show dev X` and `dcb dcbx show dev X`, concatenated:
//
//     pfc-cap 8 macsec-bypass off delay 7
//     prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
//     dscp-prio 0:0 1:0 ... CS3:3 26:3 ... 63:7
//     host ieee
//
//     and `dcb buffer show dev X` (prio-buffer, buffer-size, total-size).
//
//  2. MLNX_OFED `mlnx_qos -i X` output ("DCBX mode:", "Priority trust
//     state:", "dscp2prio mapping:", "Cable len:", "PFC configuration:",
//     "tc: ..." blocks).
//
// Blank lines, lines starting with '#' or '$' and the command line after
// any shell prompt ("root@host:~# mlnx_qos -i eth2", node.PromptCommand)
// are ignored. Any other line that is not understood is an error: a replay
// that silently drops part of the state would show a healthy node that is
// not.
func ParseRecorded(r io.Reader) (*IEEE, error) {
	data, err := safefile.ReadAll(r, maxRecorded)
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("%w: recorded state %w", errMalformed, err)
	}
	if err != nil {
		return nil, fmt.Errorf("dcbnl: reading recorded state: %w", err)
	}
	var lines []numberedLine
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' || t[0] == '$' || isCommandLine(t) {
			continue
		}
		lines = append(lines, numberedLine{i + 1, t})
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: empty recorded state", errMalformed)
	}
	for _, l := range lines {
		for _, marker := range []string{"PFC configuration:", "Priority trust state:", "DCBX mode:"} {
			if strings.HasPrefix(l.text, marker) {
				return parseMlnxQos(lines)
			}
		}
	}
	if _, ok := dcbSections[strings.Fields(lines[0].text)[0]]; ok {
		return parseDcbTool(lines)
	}
	return nil, fmt.Errorf("%w: line %d: neither `dcb` nor `mlnx_qos` output: %q", errMalformed, lines[0].n, clip(lines[0].text))
}

// isCommandLine reports the prompt line of a pasted session that ran one
// of the tools whose output ParseRecorded reads.
func isCommandLine(t string) bool {
	for _, tool := range []string{"mlnx_qos", "dcb"} {
		if _, ok := node.PromptCommand(t, tool); ok {
			return true
		}
	}
	return false
}

type numberedLine struct {
	n    int
	text string
}

func lineErr(l numberedLine, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", errMalformed, l.n, fmt.Sprintf(format, args...))
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// dcbSections are the first words of the lines `dcb pfc|app|ets|dcbx show`
// print (iproute2 dcb/dcb_pfc.c, dcb_app.c, dcb_ets.c, dcb_dcbx.c).
var dcbSections = map[string]bool{
	"pfc-cap": true, "macsec-bypass": true, "delay": true, "prio-pfc": true,
	"requests": true, "indications": true,
	"ethtype-prio": true, "default-prio": true, "dscp-prio": true, "stream-port-prio": true,
	"dgram-port-prio": true, "port-prio": true, "pcp-prio": true,
	"willing": true, "ets-cap": true, "cbs": true, "tc-bw": true, "pg-bw": true, "tc-tsa": true,
	"prio-tc": true, "reco-tc-bw": true, "reco-tc-tsa": true, "reco-prio-tc": true,
	"host": true, "lld-managed": true, "cee": true, "ieee": true, "static": true,
	"prio-buffer": true, "buffer-size": true, "total-size": true,
}

var dcbxWords = map[string]uint8{
	"host": dcbxHost, "lld-managed": dcbxLLDManaged, "cee": dcbxVerCEE, "ieee": dcbxVerIEEE, "static": dcbxStatic,
}

var tsaNames = map[string]uint8{"strict": tsaStrict, "cbs": tsaCBShaper, "ets": tsaETS, "vendor": tsaVendor}

func parseDcbTool(lines []numberedLine) (*IEEE, error) {
	out := &IEEE{}
	var (
		pfc        *PFC
		sawPrioPFC bool
		ets        *ETS
		buffer     *Buffer
		seen       = map[string]bool{}
	)
	getBuffer := func() *Buffer {
		if buffer == nil {
			buffer = &Buffer{}
		}
		return buffer
	}
	getPFC := func() *PFC {
		if pfc == nil {
			pfc = &PFC{}
		}
		return pfc
	}
	getETS := func() *ETS {
		if ets == nil {
			ets = &ETS{}
		}
		return ets
	}
	for _, l := range lines {
		f := strings.Fields(l.text)
		kw, args := f[0], f[1:]
		if !dcbSections[kw] {
			return nil, lineErr(l, "unknown `dcb` output line %q", clip(l.text))
		}
		if seen[kw] {
			return nil, lineErr(l, "%q appears twice", kw)
		}
		seen[kw] = true
		var err error
		switch kw {
		case "pfc-cap", "macsec-bypass", "delay":
			err = scalarPairs(l, f, func(k, v string) error {
				p := getPFC()
				switch k {
				case "pfc-cap":
					return parseUint8(v, 0, 255, &p.Cap)
				case "macsec-bypass":
					return parseOnOff(v, &p.MBC)
				case "delay":
					n, err := strconv.ParseUint(v, 10, 16)
					p.Delay = uint16(n)
					return err
				}
				return fmt.Errorf("%q does not belong on a `dcb pfc` line", k)
			})
		case "prio-pfc":
			sawPrioPFC = true
			p := getPFC()
			err = eachMapping(args, func(k, v string) error {
				var prio, on uint8
				if err := parseUint8(k, 0, 7, &prio); err != nil {
					return err
				}
				if err := parseOnOff(v, &on); err != nil {
					return err
				}
				p.Enabled[prio] = on == 1
				return nil
			})
		case "requests", "indications":
			dst := &getPFC().Requests
			if kw == "indications" {
				dst = &pfc.Indications
			}
			err = eachMapping(args, func(k, v string) error {
				var prio uint8
				if err := parseUint8(k, 0, 7, &prio); err != nil {
					return err
				}
				n, err := strconv.ParseUint(v, 10, 64)
				dst[prio] = n
				return err
			})
		case "willing", "ets-cap", "cbs":
			err = scalarPairs(l, f, func(k, v string) error {
				e := getETS()
				switch k {
				case "willing":
					return parseOnOff(v, &e.Willing)
				case "ets-cap":
					return parseUint8(v, 0, 255, &e.Cap)
				case "cbs":
					return parseOnOff(v, &e.CBS)
				}
				return fmt.Errorf("%q does not belong on a `dcb ets` line", k)
			})
		case "tc-bw", "pg-bw", "reco-tc-bw":
			e := getETS()
			dst := map[string]*[numPriorities]uint8{"tc-bw": &e.TCTxBW, "pg-bw": &e.TCRxBW, "reco-tc-bw": &e.RecoTCBW}[kw]
			err = eachMapping(args, func(k, v string) error {
				var tc uint8
				if err := parseUint8(k, 0, 7, &tc); err != nil {
					return err
				}
				return parseUint8(v, 0, 100, &dst[tc])
			})
		case "tc-tsa", "reco-tc-tsa":
			dst := &getETS().TSA
			if kw == "reco-tc-tsa" {
				dst = &ets.RecoTSA
			}
			err = eachMapping(args, func(k, v string) error {
				var tc uint8
				if err := parseUint8(k, 0, 7, &tc); err != nil {
					return err
				}
				tsa, ok := tsaNames[v]
				if !ok {
					return fmt.Errorf("unknown TSA %q", v)
				}
				dst[tc] = tsa
				return nil
			})
		case "prio-tc", "reco-prio-tc":
			dst := &getETS().PrioTC
			if kw == "reco-prio-tc" {
				dst = &ets.RecoPrioTC
			}
			err = eachMapping(args, func(k, v string) error {
				var prio uint8
				if err := parseUint8(k, 0, 7, &prio); err != nil {
					return err
				}
				return parseUint8(v, 0, 7, &dst[prio])
			})
		case "prio-buffer":
			b := getBuffer()
			err = eachMapping(args, func(k, v string) error {
				var prio uint8
				if err := parseUint8(k, 0, 7, &prio); err != nil {
					return err
				}
				return parseUint8(v, 0, 7, &b.Prio2Buffer[prio])
			})
		case "buffer-size":
			b := getBuffer()
			err = eachMapping(args, func(k, v string) error {
				var buf uint8
				if err := parseUint8(k, 0, 7, &buf); err != nil {
					return err
				}
				n, err := parseDcbSize(v)
				b.Size[buf] = n
				return err
			})
		case "total-size":
			if len(args) != 1 {
				err = fmt.Errorf("want one size, got %d words", len(args))
				break
			}
			getBuffer().TotalSize, err = parseDcbSize(args[0])
		case "default-prio":
			if len(args) == 0 {
				err = fmt.Errorf("no priority")
			}
			for _, a := range args {
				var prio uint8
				if err = parseUint8(a, 0, 7, &prio); err != nil {
					break
				}
				// default-prio is the (ethertype, 0, prio) entry.
				out.Apps = append(out.Apps, App{Selector: selEthertype, Priority: prio})
			}
		case "ethtype-prio", "dscp-prio", "stream-port-prio", "dgram-port-prio", "port-prio", "pcp-prio":
			err = eachMapping(args, func(k, v string) error {
				var prio uint8
				if err := parseUint8(v, 0, 7, &prio); err != nil {
					return err
				}
				app, err := parseAppKey(kw, k)
				if err != nil {
					return err
				}
				app.Priority = prio
				out.Apps = append(out.Apps, app)
				return nil
			})
		default: // a `dcb dcbx show` line: flag words only
			var v uint8
			for _, w := range f {
				bit, ok := dcbxWords[w]
				if !ok {
					return nil, lineErr(l, "%q on a `dcb dcbx` line", w)
				}
				v |= bit
			}
			out.DCBX = &v
		}
		if err != nil {
			return nil, lineErr(l, "%s: %v", kw, err)
		}
	}
	if pfc != nil {
		if !sawPrioPFC {
			return nil, fmt.Errorf("%w: `dcb pfc` lines without prio-pfc: which priorities have PFC is unknown", errMalformed)
		}
		out.PFC = pfc
	}
	if buffer != nil {
		if !seen["prio-buffer"] || !seen["buffer-size"] {
			return nil, fmt.Errorf("%w: `dcb buffer` output without both prio-buffer and buffer-size: which buffer holds which priority, or how large it is, is unknown", errMalformed)
		}
		out.Buffer = buffer
	}
	out.ETS = ets
	return out, nil
}

// parseDcbSize reads a size as `dcb buffer show` prints it: iproute2's
// sprint_size writes whole KiB, MiB or GiB as "10Kb", "1Mb", "2Gb" (b for
// bytes, not bits; rounded, within 16 bytes for Kb and 1 KiB above) and
// other values in bytes as "19872b"; the 2020 patch series printed plain
// numbers.
func parseDcbSize(s string) (uint32, error) {
	num, unit := s, uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"Gb", 1 << 30}, {"Mb", 1 << 20}, {"Kb", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || n*unit > 1<<32-1 {
		return 0, fmt.Errorf("size %q is not a byte count (N, Nb, NKb, NMb, NGb) below 4 GiB", s)
	}
	return uint32(n * unit), nil
}

// scalarPairs parses "key value key value ..." lines such as
// "pfc-cap 8 macsec-bypass off delay 7".
func scalarPairs(l numberedLine, f []string, set func(k, v string) error) error {
	if len(f)%2 != 0 {
		return fmt.Errorf("odd number of words in %q", clip(l.text))
	}
	seen := map[string]bool{}
	for i := 0; i < len(f); i += 2 {
		if seen[f[i]] {
			return fmt.Errorf("%q twice", f[i])
		}
		seen[f[i]] = true
		if err := set(f[i], f[i+1]); err != nil {
			return fmt.Errorf("%s %q: %w", f[i], f[i+1], err)
		}
	}
	return nil
}

// eachMapping parses "KEY:VALUE" words; a key may appear only once, except
// in APP tables where 802.1Q allows one key to map to several priorities.
func eachMapping(args []string, set func(k, v string) error) error {
	if len(args) == 0 {
		return fmt.Errorf("no KEY:VALUE entries")
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, ":")
		if !ok || k == "" || v == "" {
			return fmt.Errorf("%q is not KEY:VALUE", a)
		}
		if err := set(k, v); err != nil {
			return fmt.Errorf("%q: %w", a, err)
		}
	}
	return nil
}

func parseUint8(s string, lo, hi uint64, dst *uint8) error {
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%q is not a number in %d..%d", s, lo, hi)
	}
	*dst = uint8(n)
	return nil
}

func parseOnOff(s string, dst *uint8) error {
	switch s {
	case "on":
		*dst = 1
	case "off":
		*dst = 0
	default:
		return fmt.Errorf("%q is neither on nor off", s)
	}
	return nil
}

// dsfieldNames are the DSCP names `dcb app show` may print instead of
// numbers: it looks each DSCP up (shifted left by 2) in
// /etc/iproute2/rt_dsfield, whose content differs between iproute2 versions
// and distributions. Both the RFC names of current files and the legacy
// TOS names of older ones are accepted; the values are DSCP code points.
var dsfieldNames = map[string]uint8{
	"default": 0, "cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "va": 44, "le": 1,
	"reliability": 1, "throughput": 2, "lowdelay": 4, "priority": 8, "immediate": 16, "flash": 24,
	"flash-override": 32, "critical": 40, "internet": 48, "network": 56,
}

func parseAppKey(kw, k string) (App, error) {
	switch kw {
	case "ethtype-prio":
		// dcb prints the EtherType with %x, no 0x prefix.
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(k), "0x"), 16, 16)
		if err != nil || n < 0x600 {
			return App{}, fmt.Errorf("EtherType %q is not hex 600..ffff", k)
		}
		return App{Selector: selEthertype, Protocol: uint16(n)}, nil
	case "dscp-prio":
		if n, err := strconv.ParseUint(k, 10, 8); err == nil {
			if n > 63 {
				return App{}, fmt.Errorf("DSCP %d > 63", n)
			}
			return App{Selector: selDSCP, Protocol: uint16(n)}, nil
		}
		if d, ok := dsfieldNames[strings.ToLower(k)]; ok {
			return App{Selector: selDSCP, Protocol: uint16(d)}, nil
		}
		return App{}, fmt.Errorf("unknown DSCP name %q (expected 0..63 or an rt_dsfield name)", k)
	case "pcp-prio":
		// "3nd" = PCP 3 with DEI 0 (protocol 3), "3de" = DEI 1 (protocol 11);
		// `dcb -N` prints the protocol number instead.
		if n, err := strconv.ParseUint(k, 10, 8); err == nil && n <= 15 {
			return App{Selector: selPCP, Protocol: uint16(n)}, nil
		}
		if len(k) == 3 && k[0] >= '0' && k[0] <= '7' && (k[1:] == "nd" || k[1:] == "de") {
			p := uint16(k[0] - '0')
			if k[1:] == "de" {
				p += 8
			}
			return App{Selector: selPCP, Protocol: p}, nil
		}
		return App{}, fmt.Errorf("PCP %q is not 0nd..7de", k)
	}
	sel := map[string]uint8{"stream-port-prio": selStream, "dgram-port-prio": selDgram, "port-prio": selAny}[kw]
	n, err := strconv.ParseUint(k, 10, 16)
	if err != nil || n == 0 {
		return App{}, fmt.Errorf("port %q is not 1..65535", k)
	}
	return App{Selector: sel, Protocol: uint16(n)}, nil
}

// mlnx_qos notices that carry no state (python/mlnx_qos in Mellanox/mlnx-tools).
var mlnxQosNotices = []string{
	"****** WARNING",
	"Buffers commands are not supported on your system",
	"Priority trust state is not supported on your system",
}

func parseMlnxQos(lines []numberedLine) (*IEEE, error) {
	out := &IEEE{}
	var (
		section    string
		pfc        *PFC
		delay      *uint16
		ets        *ETS
		curTC      = -1
		buffer     *Buffer
		prio2buf   *[numPriorities]uint8
		sawHeaders = map[string]bool{}
	)
	once := func(l numberedLine, h string) error {
		if sawHeaders[h] {
			return lineErr(l, "%q appears twice", h)
		}
		sawHeaders[h] = true
		return nil
	}
	for _, l := range lines {
		t := l.text
		if hasAnyPrefix(t, mlnxQosNotices) {
			continue
		}
		var err error
		switch {
		case strings.HasPrefix(t, "DCBX mode:"):
			if err = once(l, "DCBX mode:"); err != nil {
				return nil, err
			}
			// mlnx_qos only tests DCB_CAP_DCBX_HOST; the other bits are lost.
			var v uint8
			switch strings.TrimSpace(strings.TrimPrefix(t, "DCBX mode:")) {
			case "OS controlled":
				v = dcbxHost
			case "Firmware controlled":
				v = dcbxLLDManaged
			default:
				return nil, lineErr(l, "unknown DCBX mode %q", clip(t))
			}
			out.DCBX = &v
			section = ""
		case strings.HasPrefix(t, "Priority trust state:"):
			if err = once(l, "Priority trust state:"); err != nil {
				return nil, err
			}
			switch v := strings.TrimSpace(strings.TrimPrefix(t, "Priority trust state:")); v {
			case "dscp", "pcp":
				out.TrustHint = v
			case "none": // mlnx_qos could not tell; fall back to the APP rule
			default:
				return nil, lineErr(l, "unknown trust state %q", v)
			}
			section = ""
		case t == "dscp2prio mapping:":
			err, section = once(l, t), "dscp2prio"
		case t == "default priority:":
			err, section = once(l, t), "default"
		case t == "PFC configuration:":
			err, section = once(l, t), "pfc"
		case strings.HasPrefix(t, "Cable len:"):
			if err = once(l, "Cable len:"); err != nil {
				return nil, err
			}
			n, perr := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(t, "Cable len:")), 10, 16)
			if perr != nil {
				return nil, lineErr(l, "cable length: %v", perr)
			}
			d := uint16(n)
			delay, section = &d, ""
		case strings.HasPrefix(t, "Receive buffer size (bytes):"):
			if err = once(l, "Receive buffer size"); err != nil {
				return nil, err
			}
			buffer, err = parseMlnxBufferSizes(strings.TrimPrefix(t, "Receive buffer size (bytes):"))
			section = ""
		case strings.HasPrefix(t, "tc:"):
			if ets == nil {
				ets = &ETS{}
			}
			curTC, err = parseMlnxTC(t, ets)
			section = "tc"
		case section == "dscp2prio" && strings.HasPrefix(t, "prio:"):
			err = parseMlnxDSCP(t, out)
		case section == "default" && strings.HasPrefix(t, "prio:"):
			var prio uint8
			if err = parseUint8(strings.TrimPrefix(t, "prio:"), 0, 7, &prio); err == nil {
				out.Apps = append(out.Apps, App{Selector: selEthertype, Priority: prio})
			}
		case section == "pfc":
			f := strings.Fields(t)
			switch f[0] {
			case "priority":
				err = expectColumns(f[1:])
			case "enabled":
				if pfc != nil {
					return nil, lineErr(l, "second \"enabled\" row")
				}
				pfc = &PFC{}
				err = eachColumn(f[1:], 1, func(prio int, v uint8) { pfc.Enabled[prio] = v == 1 })
			case "buffer":
				var p2b [numPriorities]uint8
				err = eachColumn(f[1:], 7, func(prio int, v uint8) { p2b[prio] = v })
				prio2buf = &p2b
			default:
				return nil, lineErr(l, "unexpected line in PFC configuration: %q", clip(t))
			}
		case section == "tc" && strings.HasPrefix(t, "priority:"):
			var prio uint8
			if err = parseUint8(strings.TrimSpace(strings.TrimPrefix(t, "priority:")), 0, 7, &prio); err == nil {
				ets.PrioTC[prio] = uint8(curTC)
			}
		default:
			return nil, lineErr(l, "unknown mlnx_qos line %q", clip(t))
		}
		if err != nil {
			return nil, lineErr(l, "%v", err)
		}
	}
	if pfc != nil {
		if delay != nil {
			pfc.Delay = *delay
		}
		out.PFC = pfc
	}
	if buffer != nil && prio2buf != nil {
		buffer.Prio2Buffer = *prio2buf
	}
	out.Buffer = buffer
	out.ETS = ets
	return out, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// expectColumns checks the "priority 0 1 2 3 4 5 6 7" header row.
func expectColumns(cols []string) error {
	if strings.Join(cols, " ") != "0 1 2 3 4 5 6 7" {
		return fmt.Errorf("PFC column header is %q, want priorities 0..7", strings.Join(cols, " "))
	}
	return nil
}

func eachColumn(cols []string, max uint64, set func(prio int, v uint8)) error {
	if len(cols) != numPriorities {
		return fmt.Errorf("%d columns, want %d", len(cols), numPriorities)
	}
	for i, c := range cols {
		var v uint8
		if err := parseUint8(c, 0, max, &v); err != nil {
			return err
		}
		set(i, v)
	}
	return nil
}

// parseMlnxDSCP reads "prio:3 dscp:31,30,29,28,27,26,25,24," (mlnx_qos
// wraps long lists onto several lines with the same prefix).
func parseMlnxDSCP(t string, out *IEEE) error {
	f := strings.Fields(t)
	if len(f) != 2 || !strings.HasPrefix(f[1], "dscp:") {
		return fmt.Errorf("dscp2prio line %q is not \"prio:P dscp:D,D,...\"", clip(t))
	}
	var prio uint8
	if err := parseUint8(strings.TrimPrefix(f[0], "prio:"), 0, 7, &prio); err != nil {
		return err
	}
	n := 0
	for _, d := range strings.Split(strings.TrimPrefix(f[1], "dscp:"), ",") {
		if d == "" {
			continue
		}
		var dscp uint8
		if err := parseUint8(d, 0, 63, &dscp); err != nil {
			return err
		}
		out.Apps = append(out.Apps, App{Selector: selDSCP, Priority: prio, Protocol: uint16(dscp)})
		n++
	}
	if n == 0 {
		return fmt.Errorf("dscp2prio line %q lists no DSCP", clip(t))
	}
	return nil
}

// parseMlnxTC reads "tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%". The
// rate limit is not part of IEEE and is skipped.
func parseMlnxTC(t string, ets *ETS) (int, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(t, "tc:"))
	tcStr, rest, _ := strings.Cut(rest, " ")
	var tc uint8
	if err := parseUint8(tcStr, 0, 7, &tc); err != nil {
		return 0, err
	}
	i := strings.Index(rest, "tsa:")
	if i < 0 {
		return 0, fmt.Errorf("tc line %q has no tsa", clip(t))
	}
	tsa := strings.TrimSpace(rest[i+len("tsa:"):])
	name, bw, hasBW := strings.Cut(tsa, ",")
	name = strings.TrimSpace(name)
	switch name {
	case "ets":
		ets.TSA[tc] = tsaETS
		bw = strings.TrimSpace(bw)
		if !hasBW || !strings.HasPrefix(bw, "bw:") || !strings.HasSuffix(bw, "%") {
			return 0, fmt.Errorf("ets tc line %q has no \"bw: N%%\"", clip(t))
		}
		if err := parseUint8(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(bw, "bw:"), "%")), 0, 100, &ets.TCTxBW[tc]); err != nil {
			return 0, err
		}
	case "strict":
		ets.TSA[tc] = tsaStrict
	case "vendor":
		ets.TSA[tc] = tsaVendor
	default:
		return 0, fmt.Errorf("unknown tsa %q", name)
	}
	return int(tc), nil
}

// parseMlnxBufferSizes reads the eight receive buffer sizes, each followed
// by a comma, and the size of the port's whole buffer after them, which
// mlnx_qos labels by its version (python/mlnx_qos pretty_print in
// Mellanox/mlnx-tools): "max_buffer_size=N" since v23.07 (commit b8c08c52,
// 2023-05), "total_size=N" before, nothing where the buffer is MLNX_OFED's
// sysfs. Both labels print dcbnl_buffer's total_size.
func parseMlnxBufferSizes(s string) (*Buffer, error) {
	b := &Buffer{}
	n := 0
	sawTotal := false
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		f = strings.TrimSpace(f)
		key, val, isKV := strings.Cut(f, "=")
		switch {
		case f == "":
		case isKV:
			if key != "max_buffer_size" && key != "total_size" {
				return nil, fmt.Errorf("unknown buffer field %q", clip(f))
			}
			if sawTotal {
				return nil, fmt.Errorf("second buffer total %q", clip(f))
			}
			sawTotal = true
			v, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", key, err)
			}
			b.TotalSize = uint32(v)
		case sawTotal:
			return nil, fmt.Errorf("buffer size %q after the total", clip(f))
		default:
			if n == numPriorities {
				return nil, fmt.Errorf("more than %d buffer sizes", numPriorities)
			}
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("buffer size %q: %v", f, err)
			}
			b.Size[n] = uint32(v)
			n++
		}
	}
	if n != numPriorities {
		return nil, fmt.Errorf("%d buffer sizes, want %d", n, numPriorities)
	}
	return b, nil
}
