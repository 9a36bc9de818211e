package lldpcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

func parseFile(t *testing.T, name string) *Result {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestParseOneNeighbor(t *testing.T) {
	got := parseFile(t, "json0-one-neighbor.json")
	want := node.LLDPNeighbor{Interface: "h1", ChassisName: "leaf-3", ChassisID: "0e:42:48:17:ad:dd", ChassisIDType: "mac",
		PortID: "Ethernet12", PortIDType: "local", PortDescr: "leaf-3 Ethernet12 to gpu-07 rail 0"}
	if len(got.Neighbors) != 1 || !reflect.DeepEqual(got.Neighbors[0], want) || len(got.Skipped) != 0 {
		t.Fatalf("got %+v", got)
	}
	if got.Neighbors[0].Switch() != "leaf-3" || got.Neighbors[0].SwitchPort() != "Ethernet12" {
		t.Fatalf("Switch/SwitchPort = %q %q", got.Neighbors[0].Switch(), got.Neighbors[0].SwitchPort())
	}
}

// json0 keeps its shape with two neighbours (the -f json writer turns
// "interface" from an object into an array).
func TestParseTwoNeighbors(t *testing.T) {
	got := parseFile(t, "json0-two-neighbors.json")
	if len(got.Neighbors) != 2 || got.Neighbors[0].Interface != "h1" || got.Neighbors[1].Interface != "h6" {
		t.Fatalf("got %+v", got)
	}
	if n := got.Neighbors[1]; n.ChassisName != "leaf-3" || n.PortIDType != "mac" || n.PortID != "c6:e5:9a:d0:b1:07" || n.PortDescr != "s6" {
		t.Fatalf("second neighbour %+v", n)
	}
	// A MAC port ID says nothing on a faceplate: the description names it.
	if sp := got.Neighbors[1].SwitchPort(); sp != "s6" {
		t.Fatalf("SwitchPort = %q", sp)
	}
}

func TestParseNoNeighbor(t *testing.T) {
	if got := parseFile(t, "json0-no-neighbor.json"); len(got.Neighbors) != 0 || got.Neighbors == nil || len(got.Skipped) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestParseNamelessChassis(t *testing.T) {
	got := parseFile(t, "json0-nameless-chassis-mac-port.json")
	if len(got.Neighbors) != 1 || got.Neighbors[0].ChassisName != "" || got.Neighbors[0].ChassisID != "0e:42:48:17:ad:dd" || got.Neighbors[0].PortIDType != "mac" {
		t.Fatalf("got %+v", got)
	}
	// No name: the chassis ID names the switch; a MAC port ID is all there is.
	if n := got.Neighbors[0]; n.Switch() != "0e:42:48:17:ad:dd" || n.SwitchPort() != "c6:e5:9a:d0:b1:07" {
		t.Fatalf("Switch/SwitchPort = %q %q", n.Switch(), n.SwitchPort())
	}
}

// The capture of real lldpd 1.0.16 with hostile neighbours: h0's chassis
// names itself with a string that, in -f json, closes its key and writes a
// neighbour "spoofed-sw" port "Ethernet99"; h2..h5's port descriptions hold
// a newline, 300 bytes, 90 bytes that are not UTF-8 (written as 90 U+FFFD,
// 270 bytes) and a raw 0x1F (which lldpd 1.0.16 writes unescaped, making
// the document invalid JSON). h1 and h6 are ordinary.
func TestParseHostileNeighborsChangeOnlyTheirOwnPort(t *testing.T) {
	got := parseFile(t, "json0-hostile-neighbors.json")
	byIface := map[string]node.LLDPNeighbor{}
	for _, n := range got.Neighbors {
		byIface[n.Interface] = n
	}
	const spoofName = `spoofed-sw": {"id": {"type": "mac", "value": "02:00:00:00:00:99"}}}, "port": {"id": {"type": "local", "value": "Ethernet99"}}}}, {"zz": {"chassis": {"x`
	if n := byIface["h0"]; n.ChassisName != spoofName || n.PortID != "Ethernet1" || n.ChassisID != "02:36:56:f1:3e:6c" {
		t.Errorf("the hostile chassis is not read as the text it sent: %+v", n)
	}
	for _, n := range got.Neighbors {
		if n.PortID == "Ethernet99" || n.ChassisName == "spoofed-sw" {
			t.Errorf("a neighbour the system name wrote: %+v", n)
		}
	}
	if n := byIface["h1"]; n.SwitchPort() != "Ethernet12" || n.ChassisName != "leaf-3" {
		t.Errorf("h1: %+v", n)
	}
	if n := byIface["h6"]; n.PortIDType != "mac" || n.ChassisName != "leaf-3" {
		t.Errorf("h6: %+v", n)
	}
	if len(got.Neighbors) != 3 {
		t.Errorf("neighbours %+v, want h0, h1 and h6", got.Neighbors)
	}
	want := map[string]string{"h2": "control character", "h3": "300 bytes", "h4": "270 bytes", "h5": "control character"}
	for _, s := range got.Skipped {
		if w, ok := want[s.Interface]; !ok || !strings.Contains(s.Error(), w) {
			t.Errorf("skipped %s: %v, want an error about %q", s.Interface, s, w)
		}
		delete(want, s.Interface)
	}
	for iface := range want {
		t.Errorf("%s was not skipped", iface)
	}
}

// The same neighbours through -f json: the document is refused as a whole,
// with a message that says what to capture instead, rather than read with
// the neighbour the system name wrote.
func TestParseRefusesJSONFormat(t *testing.T) {
	f, err := os.Open("testdata/json-hostile-neighbors.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = Parse(f)
	if err == nil {
		t.Fatal("accepted -f json output")
	}
	// lldpd 1.0.16 also writes h5's 0x1F raw in -f json; once escaped, the
	// document is read far enough to be named for what it is.
	if !errors.Is(err, ErrJSONFormat) || !strings.Contains(err.Error(), "json0") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseDuplicateInterfaceKeepsFirstValid(t *testing.T) {
	in := `{"lldp":[{"interface":[
	{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"1"}],"name":[{"value":"bad\nname"}]}],"port":[{"id":[{"type":"ifname","value":"p0"}]}]},
	{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"1"}],"name":[{"value":"a"}]}],"port":[{"id":[{"type":"ifname","value":"p1"}]}]},
	{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"2"}],"name":[{"value":"b"}]}],"port":[{"id":[{"type":"ifname","value":"p2"}]}]}]}]}`
	got, err := Parse(strings.NewReader(in))
	if err != nil || len(got.Neighbors) != 1 || got.Neighbors[0].ChassisName != "a" || len(got.Skipped) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"text output":   "-------------------------------------------------------------------------------\nLLDP neighbors:\n",
		"no lldp":       `{"x":[]}`,
		"lldp string":   `{"lldp":"eth0"}`,
		"truncated":     `{"lldp":[{"interface":[{"name":"eth0"`,
		"interface map": `{"lldp":[{"interface":{"eth0":{}}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := Parse(strings.NewReader(in)); err == nil {
				t.Fatalf("accepted: %+v", got)
			}
		})
	}
}

// A neighbour lldpd lists but that cannot be read is skipped on its own,
// under its interface's name when that can be read.
func TestParseSkips(t *testing.T) {
	good := `{"name":"eth9","chassis":[{"id":[{"type":"mac","value":"9"}]}],"port":[{"id":[{"type":"ifname","value":"p9"}]}]}`
	for name, tc := range map[string]struct{ entry, iface string }{
		"no chassis id":    {`{"name":"eth0","chassis":[{}],"port":[{"id":[{"type":"ifname","value":"p"}]}]}`, "eth0"},
		"no chassis":       {`{"name":"eth0","port":[{"id":[{"type":"ifname","value":"p"}]}]}`, "eth0"},
		"control char":     {`{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"1"}],"name":[{"value":"sw\u0007"}]}]}`, "eth0"},
		"id is a number":   {`{"name":"eth0","chassis":[{"id":7}]}`, "eth0"},
		"no name":          {`{"chassis":[{"id":[{"type":"mac","value":"1"}]}]}`, ""},
		"name is a number": {`{"name":7,"chassis":[{"id":[{"type":"mac","value":"1"}]}]}`, ""},
		"not an object":    {`"eth0"`, ""},
		"long port id":     {`{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"1"}]}],"port":[{"id":[{"type":"local","value":"` + strings.Repeat("p", 256) + `"}]}]}`, "eth0"},
		"raw unit sep":     {"{\"name\":\"eth0\",\"chassis\":[{\"id\":[{\"type\":\"mac\",\"value\":\"a\x1fb\"}]}]}", "eth0"},
		"descr is a list":  {`{"name":"eth0","chassis":[{"id":[{"type":"mac","value":"1"}]}],"port":[{"descr":[{"value":["x"]}]}]}`, "eth0"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(`{"lldp":[{"interface":[` + tc.entry + `,` + good + `]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Neighbors) != 1 || got.Neighbors[0].Interface != "eth9" {
				t.Errorf("the good neighbour is not kept: %+v", got.Neighbors)
			}
			if len(got.Skipped) != 1 || got.Skipped[0].Interface != tc.iface {
				t.Errorf("skipped %+v, want one on %q", got.Skipped, tc.iface)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	_, err := Query(context.Background(), "/nonexistent/lldpcli", "")
	if !errors.Is(err, ErrNotInstalled) {
		t.Errorf("missing program: %v", err)
	}
	if _, lookErr := execLookPath("lldpcli"); lookErr != nil {
		t.Skip("lldpcli not installed")
	}
	// Debian's lldpcli is setuid _lldpd: the socket's directory must be
	// searchable by that user for "no such socket" rather than EACCES.
	dir, err := os.MkdirTemp("", "lldpcli-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Query(context.Background(), "", dir+"/none.sock")
	if !errors.Is(err, ErrNotRunning) {
		t.Errorf("no daemon: %v", err)
	}
	// A socket lldpcli may not reach is a failure to fix, not an absent lldpd.
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err = Query(context.Background(), "", private+"/none.sock"); err == nil || errors.Is(err, ErrNotRunning) {
		t.Logf("unreachable socket: %v (lldpcli not setuid here)", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range []string{"json0-one-neighbor.json", "json0-two-neighbors.json", "json0-no-neighbor.json",
		"json0-nameless-chassis-mac-port.json", "json0-hostile-neighbors.json", "json-hostile-neighbors.json"} {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Parse(strings.NewReader(string(in)))
		if err != nil {
			if got != nil {
				t.Fatal("result and error together")
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range got.Neighbors {
			if n.Interface == "" || seen[n.Interface] || (n.ChassisID == "" && n.ChassisName == "") {
				t.Fatalf("bad neighbour %+v", n)
			}
			for _, s := range []string{n.Interface, n.ChassisName, n.ChassisID, n.ChassisIDType, n.PortID, n.PortIDType, n.PortDescr} {
				if checkField("field", s, false) != nil {
					t.Fatalf("neighbour %+v has a field unfit for a label: %q", n, s)
				}
			}
			seen[n.Interface] = true
		}
		for _, s := range got.Skipped {
			if s.Err == nil {
				t.Fatalf("skipped without a reason: %+v", s)
			}
		}
	})
}

// An lldpcli that prints more than maxOutput is refused with the limit
// named, not parsed from a truncated document.
func TestQueryOutputOverLimit(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "lldpcli")
	script := fmt.Sprintf("#!/bin/sh\nhead -c %d /dev/zero | tr '\\000' ' '\necho '{\"lldp\":{}}'\n", maxOutput)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Query(context.Background(), prog, "")
	if !errors.Is(err, safefile.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("more than the limit of %d bytes", maxOutput)) {
		t.Fatalf("Query = %v", err)
	}
}

// `show neighbors details` from real lldpd 1.0.16 (record-json0-details.sh):
// what a switch sends in IEEE 802.1 and 802.3 TLVs, decoded by lldpd.
func TestParseDetailsDot1Dot3(t *testing.T) {
	got := parseFile(t, "json0-details-dot1-dot3.json")
	if len(got.Neighbors) != 4 || len(got.Skipped) != 0 {
		t.Fatalf("got %+v", got)
	}
	by := map[string]node.LLDPNeighbor{}
	for _, n := range got.Neighbors {
		by[n.Interface] = n
	}
	type tlvs struct {
		mfs, pvid int
		vlans     []int
		macphy    *node.LLDPMACPHY
	}
	for iface, want := range map[string]tlvs{
		"h1": {9216, 100, []int{100, 200}, &node.LLDPMACPHY{AutonegSupported: true, AutonegEnabled: true, MAU: "400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber PMD"}},
		"h2": {1518, 10, []int{10}, &node.LLDPMACPHY{AutonegSupported: true, AutonegEnabled: true, MAU: "100GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper balanced cable"}},
		// lldpd as the switch's agent: MAC/PHY, no MFS, no VLAN.
		"h3": {0, 0, nil, &node.LLDPMACPHY{MAU: "10GbaseT - Four-pair Category 6A or better, full duplex mode only"}},
		// A port VLAN ID without a VLAN name: lldpd lists it without a value.
		"h4": {9100, 300, []int{300}, nil},
	} {
		n := by[iface]
		g := tlvs{n.MaxFrameSize, n.PVID, n.VLANs, n.MACPHY}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("%s: TLVs %+v (MAC/PHY %+v), want %+v (%+v)", iface, g, g.macphy, want, want.macphy)
		}
	}
	if n := by["h1"]; n.Switch() != "leaf-3" || n.SwitchPort() != "Ethernet12" {
		t.Errorf("h1 identity %q %q", n.Switch(), n.SwitchPort())
	}
	if sp, ok := by["h1"].MACPHY.SpeedMbps(); !ok || sp != 400000 {
		t.Errorf("h1 MAU speed %d %v", sp, ok)
	}
}

// Without "details" lldpd leaves the TLVs out: they are unknown, and the
// neighbour is the same.
func TestParseWithoutDetailsLeavesTLVsUnknown(t *testing.T) {
	got := parseFile(t, "json0-no-details-dot1-dot3.json")
	if len(got.Neighbors) != 1 {
		t.Fatalf("got %+v", got)
	}
	n := got.Neighbors[0]
	if n.Switch() != "leaf-3" || n.SwitchPort() != "Ethernet12" || n.MaxFrameSize != 0 || n.PVID != 0 || n.VLANs != nil || n.MACPHY != nil {
		t.Errorf("got %+v", n)
	}
}

// TLVs that cannot be read are unknown; the neighbour itself is kept.
func TestParseBadTLVsKeepNeighbour(t *testing.T) {
	for name, tlv := range map[string]string{
		"mfs not a number": `"port": [{"id": [{"type": "local", "value": "Ethernet1"}], "mfs": [{"value": "big"}]}], "vlan": [{"vlan-id": "4095", "pvid": true}]`,
		"mfs too small":    `"port": [{"id": [{"type": "local", "value": "Ethernet1"}], "mfs": [{"value": "12"}]}]`,
		"flag a string":    `"port": [{"id": [{"type": "local", "value": "Ethernet1"}], "auto-negotiation": [{"supported": "maybe"}]}]`,
		"vlan an object":   `"port": [{"id": [{"type": "local", "value": "Ethernet1"}]}], "vlan": {"vlan-id": "100"}`,
	} {
		doc := `{"lldp": [{"interface": [{"name": "h1", "chassis": [{"name": [{"value": "leaf-3"}]}], ` + tlv + `}]}]}`
		got, err := Parse(strings.NewReader(doc))
		if err != nil || len(got.Neighbors) != 1 {
			t.Errorf("%s: %+v, %v", name, got, err)
			continue
		}
		n := got.Neighbors[0]
		if n.SwitchPort() != "Ethernet1" || n.MaxFrameSize != 0 || n.PVID != 0 || n.VLANs != nil || n.MACPHY != nil {
			t.Errorf("%s: %+v", name, n)
		}
	}
	// lldpd before its JSON writer made flags booleans wrote "yes"/"no".
	got, err := Parse(strings.NewReader(`{"lldp": [{"interface": [{"name": "h1", "chassis": [{"name": [{"value": "leaf-3"}]}], "port": [{"id": [{"type": "local", "value": "Ethernet1"}], "auto-negotiation": [{"supported": "yes", "enabled": "no", "current": [{"value": "unknown"}]}]}]}]}]}`))
	if err != nil || got.Neighbors[0].MACPHY == nil || !got.Neighbors[0].MACPHY.AutonegSupported || got.Neighbors[0].MACPHY.AutonegEnabled {
		t.Errorf("yes/no flags: %+v, %v", got, err)
	}
}
