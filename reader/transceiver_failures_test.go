package reader

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// Failed module reads as real tools printed them
// (node/testdata/transceiver/*.source) are read errors of the transceiver
// source for their port, not "no module": mlx5's netlink warnings before a
// dump of garbage, an EIO on a port whose link is up, bnxt's corrupted SFP.
// An EIO on a port without link is an empty cage, and a sound SFP is only
// not decoded: neither is an error.
func TestModuleReadFailuresAreReadErrors(t *testing.T) {
	dir := copyReplay(t, "mlx5-degraded")
	put := func(iface, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, iface+".module.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	capture := func(name string) string {
		t.Helper()
		b, err := os.ReadFile("../node/testdata/transceiver/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	put("ens1f0np0", capture("mlx5-netlink-warning-garbage.txt"))
	put("ens3f0np0", "[root@gpu01 ~]# ethtool -m ens3f0np0 hex on\nCannot get Module EEPROM data: Input/output error\n") // link up
	put("ens2f0np0", "[root@gpu01 ~]# ethtool -m ens2f0np0 hex on\nCannot get Module EEPROM data: Input/output error\n") // link down
	put("ens4f0np0", capture("sfp-bnxt-corrupted-sudo-prompt.txt"))
	put("ens5f0np0", capture("sfp-ice-correct-sudo-prompt.txt"))
	o := fixtureOptions("mlx5-degraded", node.SourceTransceiver)
	o.ReplayDir = dir
	r := newTestReader(t, o)
	snap := r.Read().Snapshot
	for _, iface := range []string{"ens1f0np0", "ens2f0np0", "ens3f0np0", "ens4f0np0", "ens5f0np0"} {
		if tr := snap.Transceivers[iface]; tr != nil {
			t.Errorf("%s: module %+v from a failed read", iface, tr)
		}
	}
	if tr := snap.Transceivers["ens6f0np0"]; tr == nil {
		t.Error("ens6f0np0's sound module lost")
	}
	if n := r.ReadErrors(node.SourceTransceiver); n != 3 {
		t.Errorf("%d transceiver read errors, want 3 (mlx5 warning, EIO with link up, corrupt SFP)", n)
	}
}

// fakeShortNL is mlx5 before Linux d1c94bc5b90c over netlink: a failed
// read answered as a success of 0 bytes.
type fakeShortNL struct{}

func (fakeShortNL) ModuleEEPROM(string, uint8, uint8, uint32, uint32) ([]byte, error) {
	return []byte{}, nil
}

func TestModuleShortReadIsAFailure(t *testing.T) {
	m, err := readModulePages(fakeShortNL{}, "eth2")
	if !errors.Is(err, node.ErrModuleReadFailed) || noModule(err) {
		t.Errorf("0-byte read: %+v, %v; want a read failure", m, err)
	}
}
