package sysfixture

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// writeDevlinkInfo writes `devlink dev info -j` of the node's mlx5
// physical functions in the shape iproute2 prints (see
// internal/devlinknl/testdata/SOURCES, info-text-mlx5-cx7.txt): the PSID as
// the fixed fw.psid, the running firmware as fw.version and fw, the
// stored one likewise (NIC.PendingFirmware when an update waits).
func writeDevlinkInfo(dir string, n Node, nics map[string]NIC) error {
	type versions struct {
		Fixed   map[string]string `json:"fixed"`
		Running map[string]string `json:"running"`
		Stored  map[string]string `json:"stored"`
	}
	type instance struct {
		Driver   string   `json:"driver"`
		Versions versions `json:"versions"`
	}
	info := map[string]instance{}
	for i, d := range n.Devices {
		if d.Netdev == "" || d.LinkLayer != "Ethernet" || d.PCIAddress == "" || d.Driver != "mlx5_core" {
			continue
		}
		nic, ok := nics[d.Name]
		if !ok {
			nic = DefaultNIC(i)
		}
		if nic.VF {
			continue // a VF's devlink instance reports no firmware
		}
		stored := d.FWVer
		if nic.PendingFirmware != "" {
			stored = nic.PendingFirmware
		}
		info["pci/"+d.PCIAddress] = instance{Driver: d.Driver, Versions: versions{
			Fixed:   map[string]string{"fw.psid": d.BoardID},
			Running: map[string]string{"fw.version": d.FWVer, "fw": d.FWVer},
			Stored:  map[string]string{"fw.version": stored, "fw": stored},
		}}
	}
	if len(info) == 0 {
		return nil
	}
	b, err := json.MarshalIndent(map[string]any{"info": info}, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "devlink-info.json"), append(b, '\n'), 0o644)
}
