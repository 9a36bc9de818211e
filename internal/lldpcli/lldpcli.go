// Package lldpcli reads LLDP neighbours from the local lldpd through its
// client, `lldpcli -f json show neighbors`, and decodes that output.
//
// Why lldpd and not the exporter receiving LLDP frames itself: a passive
// receiver needs a raw packet socket (CAP_NET_RAW) on every interface and
// sees nothing at all where the NIC consumes LLDP: a ConnectX running
// DCBX in firmware (the default when the host does not run lldpad/lldpd
// DCBX) answers the switch's LLDP itself and does not pass the frames to
// the host. lldpd is the usual host agent, already parses every TLV and
// vendor quirk, and keeps the neighbour table the switch side expects to
// see; the exporter only asks it.
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
	errMalformed  = errors.New("malformed lldpcli JSON")
)

// maxOutput bounds what is read from lldpcli: a neighbour is about 1 KB of
// JSON, so 4 MiB is thousands of them.
const maxOutput = 4 << 20

// maxStderr bounds the kept error output: its last line is the message.
const maxStderr = 4096

// maxField bounds a decoded string (a label value): LLDP TLVs carry at
// most 255 bytes.
const maxField = 255

// Query runs `lldpcli [-u socket] -f json show neighbors` bounded by ctx
// and decodes its output. program is the lldpcli path ("" = "lldpcli" on
// PATH); socket is lldpd's control socket ("" = lldpd's default).
func Query(ctx context.Context, program, socket string) ([]node.LLDPNeighbor, error) {
	if program == "" {
		program = "lldpcli"
	}
	args := []string{"-f", "json"}
	if socket != "" {
		args = append(args, "-u", socket)
	}
	args = append(args, "show", "neighbors")
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

// Parse decodes `lldpcli -f json show neighbors`. lldpd's JSON writer turns
// its element tree into JSON in a way that depends on the data:
//
//   - "interface" is an object keyed by interface name when there is one
//     neighbour, and an array of such one-key objects when there are
//     several (the same interface appears twice when it has two
//     neighbours);
//   - "chassis" is an object keyed by the system name when the neighbour
//     sends one, and the chassis' fields themselves when it does not;
//   - an element with attributes ("id" with its "type") is an object with
//     a "value", one without is a plain string.
//
// No neighbour at all is {"lldp": {}}. Neighbours come back in interface
// order; an interface with more than one keeps the first lldpd lists.
func Parse(r io.Reader) ([]node.LLDPNeighbor, error) {
	var doc struct {
		LLDP map[string]json.RawMessage `json:"lldp"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if doc.LLDP == nil {
		return nil, fmt.Errorf("%w: no \"lldp\" object", errMalformed)
	}
	raw, ok := doc.LLDP["interface"]
	if !ok {
		return []node.LLDPNeighbor{}, nil
	}
	var entries []map[string]json.RawMessage
	switch firstByte(raw) {
	case '{':
		var one map[string]json.RawMessage
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("%w: interface: %v", errMalformed, err)
		}
		entries = append(entries, one)
	case '[':
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, fmt.Errorf("%w: interface: %v", errMalformed, err)
		}
	default:
		return nil, fmt.Errorf("%w: interface is neither an object nor an array", errMalformed)
	}
	seen := map[string]bool{}
	var out []node.LLDPNeighbor
	for _, e := range entries {
		for _, ifname := range slices.Sorted(mapKeys(e)) {
			n, err := parseNeighbor(ifname, e[ifname])
			if err != nil {
				return nil, err
			}
			if !seen[ifname] {
				seen[ifname] = true
				out = append(out, n)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b node.LLDPNeighbor) int { return strings.Compare(a.Interface, b.Interface) })
	return out, nil
}

func mapKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
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

func parseNeighbor(ifname string, raw json.RawMessage) (node.LLDPNeighbor, error) {
	n := node.LLDPNeighbor{Interface: ifname}
	if err := checkField("interface", ifname, true); err != nil {
		return n, err
	}
	var body struct {
		Chassis map[string]json.RawMessage `json:"chassis"`
		Port    map[string]json.RawMessage `json:"port"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return n, fmt.Errorf("%w: %s: %v", errMalformed, ifname, err)
	}
	chassis := body.Chassis
	if _, nameless := chassis["id"]; !nameless && len(chassis) == 1 {
		for name, v := range chassis {
			n.ChassisName = name
			chassis = nil
			if err := json.Unmarshal(v, &chassis); err != nil {
				return n, fmt.Errorf("%w: %s: chassis %q: %v", errMalformed, ifname, name, err)
			}
		}
	}
	var err error
	if n.ChassisIDType, n.ChassisID, err = typedValue(chassis["id"]); err != nil {
		return n, fmt.Errorf("%w: %s: chassis id: %v", errMalformed, ifname, err)
	}
	if n.PortIDType, n.PortID, err = typedValue(body.Port["id"]); err != nil {
		return n, fmt.Errorf("%w: %s: port id: %v", errMalformed, ifname, err)
	}
	if _, n.PortDescr, err = typedValue(body.Port["descr"]); err != nil {
		return n, fmt.Errorf("%w: %s: port descr: %v", errMalformed, ifname, err)
	}
	for what, s := range map[string]string{"chassis name": n.ChassisName, "chassis id": n.ChassisID,
		"chassis id type": n.ChassisIDType, "port id": n.PortID, "port id type": n.PortIDType, "port descr": n.PortDescr} {
		if err := checkField(what, s, false); err != nil {
			return n, fmt.Errorf("%s: %w", ifname, err)
		}
	}
	if n.ChassisID == "" && n.ChassisName == "" {
		return n, fmt.Errorf("%w: %s: neighbour without chassis id or name", errMalformed, ifname)
	}
	return n, nil
}

// typedValue reads an element that is either "text" or {"type": t, "value": v}.
func typedValue(raw json.RawMessage) (typ, value string, err error) {
	if raw == nil {
		return "", "", nil
	}
	switch firstByte(raw) {
	case '"':
		err = json.Unmarshal(raw, &value)
		return "", value, err
	case '{':
		var tv struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		}
		err = json.Unmarshal(raw, &tv)
		return tv.Type, tv.Value, err
	}
	return "", "", errors.New("neither a string nor an object")
}

func checkField(what, s string, required bool) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%w: empty %s", errMalformed, what)
	case len(s) > maxField:
		return fmt.Errorf("%w: %s of %d bytes", errMalformed, what, len(s))
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
