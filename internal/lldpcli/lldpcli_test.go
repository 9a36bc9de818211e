package lldpcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

func parseFile(t *testing.T, name string) []node.LLDPNeighbor {
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
	got := parseFile(t, "one-neighbor.json")
	want := []node.LLDPNeighbor{{Interface: "vB", ChassisName: "leaf-3", ChassisID: "fa:23:96:1c:cd:b7", ChassisIDType: "mac",
		PortID: "Ethernet12", PortIDType: "local", PortDescr: "leaf-3 to gpu-node-07 rail 0"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("got %+v", got)
	}
	if got[0].Switch() != "leaf-3" || got[0].SwitchPort() != "Ethernet12" {
		t.Fatalf("Switch/SwitchPort = %q %q", got[0].Switch(), got[0].SwitchPort())
	}
}

func TestParseTwoNeighbors(t *testing.T) {
	got := parseFile(t, "two-neighbors.json")
	if len(got) != 2 || got[0].Interface != "vB" || got[1].Interface != "vB2" {
		t.Fatalf("got %+v", got)
	}
	if got[1].ChassisName != "leaf-4" || got[1].PortIDType != "ifname" || got[1].PortID != "vC" {
		t.Fatalf("second neighbour %+v", got[1])
	}
}

func TestParseNoNeighbor(t *testing.T) {
	if got := parseFile(t, "no-neighbor.json"); len(got) != 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestParseNamelessChassis(t *testing.T) {
	got := parseFile(t, "nameless-chassis-mac-port.json")
	if len(got) != 1 || got[0].ChassisName != "" || got[0].ChassisID != "0c:42:a1:77:10:00" || got[0].PortIDType != "mac" {
		t.Fatalf("got %+v", got)
	}
	// No name: the chassis ID names the switch; a MAC port ID is all there is.
	if got[0].Switch() != "0c:42:a1:77:10:00" || got[0].SwitchPort() != "0c:42:a1:77:10:0c" {
		t.Fatalf("Switch/SwitchPort = %q %q", got[0].Switch(), got[0].SwitchPort())
	}
}

func TestParseDuplicateInterfaceKeepsFirst(t *testing.T) {
	in := `{"lldp":{"interface":[{"eth0":{"chassis":{"a":{"id":{"type":"mac","value":"1"}}},"port":{"id":{"type":"ifname","value":"p1"}}}},
	{"eth0":{"chassis":{"b":{"id":{"type":"mac","value":"2"}}},"port":{"id":{"type":"ifname","value":"p2"}}}}]}}`
	got, err := Parse(strings.NewReader(in))
	if err != nil || len(got) != 1 || got[0].ChassisName != "a" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"text output":      "-------------------------------------------------------------------------------\nLLDP neighbors:\n",
		"no lldp":          `{"x":{}}`,
		"interface string": `{"lldp":{"interface":"eth0"}}`,
		"no chassis id":    `{"lldp":{"interface":{"eth0":{"chassis":{},"port":{"id":{"type":"ifname","value":"p"}}}}}}`,
		"control char":     `{"lldp":{"interface":{"eth0":{"chassis":{"sw\u0007":{"id":{"type":"mac","value":"1"}}},"port":{}}}}}`,
		"id is a number":   `{"lldp":{"interface":{"eth0":{"chassis":{"sw":{"id":7}},"port":{}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := Parse(strings.NewReader(in)); err == nil {
				t.Fatalf("accepted: %+v", got)
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
	for _, n := range []string{"one-neighbor.json", "two-neighbors.json", "no-neighbor.json", "nameless-chassis-mac-port.json"} {
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
		for _, n := range got {
			if n.Interface == "" || seen[n.Interface] || (n.ChassisID == "" && n.ChassisName == "") {
				t.Fatalf("bad neighbour %+v", n)
			}
			seen[n.Interface] = true
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
