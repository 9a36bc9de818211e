// Package lldpcli reads LLDP neighbours from the local lldpd through its
// client, `lldpcli -f json0 show neighbors details`, and decodes that
// output. Only "details" has the IEEE 802.1 and 802.3 TLVs (VLANs, MAC/PHY,
// maximum frame size: lldpd's display.c writes them at DISPLAY_DETAILS);
// the plain listing is read just as well, with those unknown.
//
// Why lldpd and not the exporter receiving LLDP frames itself: a passive
// receiver needs a raw packet socket (CAP_NET_RAW) on every interface and
// sees nothing at all where the NIC consumes LLDP: a ConnectX running
// DCBX in firmware (the default when the host does not run lldpad/lldpd
// DCBX) answers the switch's LLDP itself and does not pass the frames to
// the host. lldpd is the usual host agent, already parses every TLV and
// vendor quirk, and keeps the neighbour table the switch side expects to
// see; the exporter only asks it.
//
// Why json0 and not json: what a neighbour sends is a switch's word, and
// untrusted. lldpd's `-f json` writer promotes the neighbour's system name
// to an object key and, up to lldpd 1.0.21 (Debian 12 ships 1.0.16), writes
// keys without escaping them (fixed in 1.0.22 by commit 883afdb6), so a
// system name can close its key and write a neighbour of its own; it also
// changes shape with the data (an object for one neighbour, an array for
// several). `-f json0`, a runtime format since lldpd 0.9.8 (2017), skips
// that step: every element is an array, every text a value the writer
// escapes. testdata/ holds both outputs of one hostile neighbour.
package lldpcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

var (
	// ErrNotInstalled: no lldpcli program.
	ErrNotInstalled = errors.New("lldpcli not installed")
	// ErrNotRunning: lldpcli could not reach lldpd (not running, or
	// another control socket).
	ErrNotRunning = errors.New("lldpd not running (lldpcli cannot reach its control socket)")
	// ErrJSONFormat: the document is `lldpcli -f json` output, which is not
	// read (see the package comment).
	ErrJSONFormat = errors.New("this is `lldpcli -f json` output, whose keys lldpd up to 1.0.21 does not escape, so a neighbour's system name can rewrite it; capture `lldpcli -f json0 show neighbors` instead")
	errMalformed  = errors.New("malformed lldpcli JSON")
)

// maxOutput bounds what is read from lldpcli: a neighbour is about 1.9 KB
// of json0, so 4 MiB is two thousand of them.
const maxOutput = 4 << 20

// maxStderr bounds the kept error output: its last line is the message.
const maxStderr = 4096

// maxField bounds a decoded string (a label value): LLDP TLVs carry at
// most 255 bytes by IEEE 802.1AB (lldpd accepts up to 511).
const maxField = 255

// Result is what lldpd reported: the neighbours that could be read, and
// those that could not, each on its own. A hostile or broken neighbour
// costs its own port, never the node's other ports.
type Result struct {
	// Neighbors holds one neighbour per interface, in interface order; an
	// interface with more than one keeps the first valid one lldpd lists.
	Neighbors []node.LLDPNeighbor
	// Skipped are the neighbours left out, in lldpd's order.
	Skipped []Skipped
}

// Skipped is a neighbour that was left out and why.
type Skipped struct {
	// Interface is the local interface it was received on; "" when lldpd's
	// entry did not even name one that can be read.
	Interface string
	Err       error
}

func (s Skipped) Error() string {
	if s.Interface == "" {
		return "LLDP neighbour skipped: " + s.Err.Error()
	}
	return "LLDP neighbour of " + node.ValidUTF8(s.Interface) + " skipped: " + s.Err.Error()
}

func (s Skipped) Unwrap() error { return s.Err }

// Query runs `lldpcli [-u socket] -f json0 show neighbors details` bounded by ctx
// and decodes its output. program is the lldpcli path ("" = "lldpcli" on
// PATH); socket is lldpd's control socket ("" = lldpd's default).
func Query(ctx context.Context, program, socket string) (*Result, error) {
	if program == "" {
		program = "lldpcli"
	}
	args := []string{"-f", "json0"}
	if socket != "" {
		args = append(args, "-u", socket)
	}
	args = append(args, "show", "neighbors", "details")
	cmd := exec.CommandContext(ctx, program, args...)
	// lldpcli never needs more than a moment after its context ends;
	// WaitDelay keeps a stuck child from holding the read.
	cmd.WaitDelay = time.Second
	stdout, stderr := &safefile.LimitedBuffer{Limit: maxOutput}, &safefile.LimitedBuffer{Limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lldpcli: %w", ctx.Err())
		}
		// No daemon is "absent"; a daemon the exporter may not talk to is a
		// failure to fix (the socket's group), so it is not hidden as absent.
		if strings.Contains(msg, "unable to connect to socket") && !strings.Contains(msg, "ermission denied") {
			return nil, fmt.Errorf("%w: %s", ErrNotRunning, lastLine(msg))
		}
		return nil, fmt.Errorf("lldpcli: %w: %s", err, lastLine(msg))
	}
	out, err := stdout.Bytes()
	if err != nil {
		return nil, fmt.Errorf("lldpcli: output %w", err)
	}
	return Parse(bytes.NewReader(out))
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Parse decodes `lldpcli -f json0 show neighbors`:
//
//	{"lldp": [{"interface": [{"name": "eth0", "via": "LLDP", ...,
//	  "chassis": [{"id": [{"type": "mac", "value": "…"}], "name": [{"value": "leaf-3"}], ...}],
//	  "port": [{"id": [{"type": "local", "value": "Ethernet12"}], "descr": [{"value": "…"}], ...}]}, ...]}]}
//
// and {"lldp": [{}]} when there is no neighbour. The document as a whole
// must be lldpd's; each interface's entry is then decoded on its own, and
// one that cannot be read, or whose fields are not fit to be labels, is
// skipped with its reason while the others are kept.
func Parse(r io.Reader) (*Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc struct {
		LLDP json.RawMessage `json:"lldp"`
	}
	if err := json.Unmarshal(escapeControlBytes(data), &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	switch firstByte(doc.LLDP) {
	case '{':
		return nil, ErrJSONFormat
	case '[':
	default:
		return nil, fmt.Errorf("%w: no \"lldp\" array", errMalformed)
	}
	var sections []struct {
		Interface []json.RawMessage `json:"interface"`
	}
	if err := json.Unmarshal(doc.LLDP, &sections); err != nil {
		return nil, fmt.Errorf("%w: lldp: %v", errMalformed, err)
	}
	res := &Result{Neighbors: []node.LLDPNeighbor{}}
	seen := map[string]bool{}
	for _, s := range sections {
		for _, raw := range s.Interface {
			n, err := parseNeighbor(raw)
			switch {
			case err != nil:
				res.Skipped = append(res.Skipped, Skipped{Interface: n.Interface, Err: err})
			case !seen[n.Interface]:
				seen[n.Interface] = true
				res.Neighbors = append(res.Neighbors, n)
			}
		}
	}
	slices.SortStableFunc(res.Neighbors, func(a, b node.LLDPNeighbor) int { return strings.Compare(a.Interface, b.Interface) })
	return res, nil
}

// escapeControlBytes writes the control bytes that are not JSON white
// space as \u00XX escapes. lldpd up to 1.0.21 writes byte 0x1F of a
// neighbour's text raw inside a JSON string (an off-by-one fixed in 1.0.22
// by commit 6f55f7af), which no JSON decoder accepts: one neighbour would
// make the whole document unreadable. Outside strings such a byte is an
// error before and after, so only the neighbour that sent it is affected
// (and then skipped for its control character).
func escapeControlBytes(data []byte) []byte {
	n := 0
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			n++
		}
	}
	if n == 0 {
		return data
	}
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(data)+5*n)
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			continue
		}
		out = append(out, c)
	}
	return out
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// element is a json0 text element: {"value": v}, with "type" for IDs.
type element struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// neighborEntry is one entry of json0's "interface" array, as far as the
// exporter reads it.
type neighborEntry struct {
	Name    string `json:"name"`
	Chassis []struct {
		ID   []element `json:"id"`
		Name []element `json:"name"`
	} `json:"chassis"`
	Port []struct {
		ID    []element `json:"id"`
		Descr []element `json:"descr"`
	} `json:"port"`
}

// first is the first element of a json0 array, the zero one when empty.
func first(es []element) element {
	if len(es) == 0 {
		return element{}
	}
	return es[0]
}

// parseNeighbor decodes one entry. The returned neighbour's Interface is
// set whenever the entry names a readable one, error or not.
func parseNeighbor(raw json.RawMessage) (node.LLDPNeighbor, error) {
	var n node.LLDPNeighbor
	var name struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &name) == nil && checkField("interface", name.Name, true) == nil {
		n.Interface = name.Name
	}
	var e neighborEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return n, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if err := checkField("interface", e.Name, true); err != nil {
		return n, err
	}
	if len(e.Chassis) == 0 {
		return n, fmt.Errorf("%w: no chassis", errMalformed)
	}
	c := e.Chassis[0]
	id, sysName := first(c.ID), first(c.Name)
	n.ChassisName, n.ChassisID, n.ChassisIDType = sysName.Value, id.Value, id.Type
	if len(e.Port) > 0 {
		p := e.Port[0]
		pid := first(p.ID)
		n.PortID, n.PortIDType, n.PortDescr = pid.Value, pid.Type, first(p.Descr).Value
	}
	for _, f := range []struct{ what, s string }{{"chassis name", n.ChassisName}, {"chassis id", n.ChassisID},
		{"chassis id type", n.ChassisIDType}, {"port id", n.PortID}, {"port id type", n.PortIDType}, {"port description", n.PortDescr}} {
		if err := checkField(f.what, f.s, false); err != nil {
			return n, err
		}
	}
	if n.ChassisID == "" && n.ChassisName == "" {
		return n, fmt.Errorf("%w: neighbour without chassis id or name", errMalformed)
	}
	n.MaxFrameSize, n.PVID, n.VLANs, n.MACPHY = parseTLVs(raw)
	return n, nil
}

// tlvEntry is the part of a json0 interface entry that `show neighbors
// details` adds from the switch's IEEE 802.1 and 802.3 TLVs:
//
//	"port": [{..., "mfs": [{"value": "9216"}],
//	  "auto-negotiation": [{"supported": true, "enabled": true, "advertised": [...],
//	    "current": [{"value": "400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber PMD"}]}]}],
//	"vlan": [{"vlan-id": "100", "pvid": true, "value": "vlan100"}, {"vlan-id": "300", "pvid": true}]
//
// (testdata/json0-details-dot1-dot3.json). A "vlan" element without a
// value is the port VLAN ID of a switch that names no VLAN by it.
type tlvEntry struct {
	Port []struct {
		MFS     []element `json:"mfs"`
		Autoneg []struct {
			Supported flag      `json:"supported"`
			Enabled   flag      `json:"enabled"`
			Current   []element `json:"current"`
		} `json:"auto-negotiation"`
	} `json:"port"`
	VLAN []struct {
		ID   string `json:"vlan-id"`
		PVID flag   `json:"pvid"`
	} `json:"vlan"`
}

// flag is a json0 attribute lldpd writes "yes"/"no" for, which its JSON
// writer turns into true/false.
type flag bool

func (f *flag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", `"yes"`, `"on"`:
		*f = true
	case "false", `"no"`, `"off"`:
		*f = false
	default:
		return fmt.Errorf("%s is not a flag", clipBytes(b))
	}
	return nil
}

func clipBytes(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// parseTLVs reads the optional TLVs of one entry. What cannot be read is
// unknown, as if the switch had not sent it: the identity of the
// neighbour, which the rest of the exporter keys on, stays.
func parseTLVs(raw json.RawMessage) (mfs, pvid int, vlans []int, macphy *node.LLDPMACPHY) {
	var e tlvEntry
	if json.Unmarshal(raw, &e) != nil {
		return 0, 0, nil, nil
	}
	if len(e.Port) > 0 {
		p := e.Port[0]
		// IEEE 802.3 frames are 64 bytes and more; the TLV has 16 bits.
		if v, err := strconv.Atoi(first(p.MFS).Value); err == nil && v >= 64 && v <= 65535 {
			mfs = v
		}
		if len(p.Autoneg) > 0 {
			a := p.Autoneg[0]
			mau := first(a.Current).Value
			if checkField("MAU type", mau, false) != nil {
				mau = ""
			}
			macphy = &node.LLDPMACPHY{AutonegSupported: bool(a.Supported), AutonegEnabled: bool(a.Enabled), MAU: mau}
		}
	}
	for _, v := range e.VLAN {
		id, err := strconv.Atoi(v.ID)
		if err != nil || id < 1 || id > 4094 {
			continue
		}
		if v.PVID {
			pvid = id
		}
		if !slices.Contains(vlans, id) {
			vlans = append(vlans, id)
		}
	}
	return mfs, pvid, vlans, macphy
}

// checkField refuses what cannot be a label value or a line of the
// doctor: more than maxField bytes, invalid UTF-8, control characters.
func checkField(what, s string, required bool) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%w: empty %s", errMalformed, what)
	case len(s) > maxField:
		return fmt.Errorf("%w: %s of %d bytes, more than the %d LLDP allows", errMalformed, what, len(s), maxField)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not UTF-8", errMalformed, what)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %s %q has a control character", errMalformed, what, s)
		}
	}
	return nil
}
