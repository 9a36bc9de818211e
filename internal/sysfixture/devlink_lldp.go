package sysfixture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Leaf switch and port each rail of a sample node is cabled to: rails 0-3
// on leaf-1, 4-7 on leaf-2, SONiC port names (Ethernet0, Ethernet8, ...)
// with their front-panel alias as description.
func lldpNeighbor(rail int) (chassis, chassisMAC, port, descr string) {
	leaf := rail/4 + 1
	n := (rail % 4) * 8
	return fmt.Sprintf("leaf-%d", leaf), fmt.Sprintf("b8:ce:f6:%02x:00:00", 0x10+leaf),
		fmt.Sprintf("Ethernet%d", n), fmt.Sprintf("etp%d", n/8+1)
}

// writeDevlinkLLDP writes the `devlink health show -j` and `lldpcli -f json
// show neighbors` captures of the node's Ethernet physical functions, in
// the shapes iproute2 and lldpd 1.0.16 print (see
// internal/devlinknl/testdata/SOURCES and internal/lldpcli/testdata/SOURCES).
// A port whose link is down has no neighbour: lldpd ages it out.
func writeDevlinkLLDP(dir string, n Node, nics map[string]NIC) error {
	var health, neigh []string
	for i, d := range n.Devices {
		if d.Netdev == "" || d.LinkLayer != "Ethernet" || d.PCIAddress == "" {
			continue
		}
		nic, ok := nics[d.Name]
		if !ok {
			nic = DefaultNIC(i)
		}
		if nic.VF {
			continue
		}
		txState := "healthy"
		if nic.TXReporterInError {
			txState = "error"
		}
		health = append(health, fmt.Sprintf(`        "pci/%s": [ {
                "reporter": "fw",
                "state": "healthy",
                "error": 0,
                "recover": 0,
                "auto_dump": true
            },{
                "reporter": "fw_fatal",
                "state": "healthy",
                "error": 0,
                "recover": 0,
                "grace_period": 60000,
                "auto_recover": true,
                "auto_dump": true
            } ],
        "pci/%s/65535": [ {
                "reporter": "tx",
                "state": "%s",
                "error": %d,
                "recover": %d,
                "grace_period": 500,
                "auto_recover": true,
                "auto_dump": true
            },{
                "reporter": "rx",
                "state": "healthy",
                "error": 0,
                "recover": 0,
                "grace_period": 500,
                "auto_recover": true,
                "auto_dump": true
            } ]`, d.PCIAddress, d.PCIAddress, txState, nic.TXReporterErrors, nic.TXReporterRecoveries))
		if d.OperState != "up" {
			continue
		}
		chassis, chassisMAC, port, descr := lldpNeighbor(i)
		body := map[string]any{
			"via": "LLDP", "rid": fmt.Sprint(i/4 + 1), "age": "12 days, 03:11:42",
			"chassis": map[string]any{chassis: map[string]any{
				"id":      map[string]string{"type": "mac", "value": chassisMAC},
				"descr":   "SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN5600 - Distribution: Debian 12.5 - Kernel: 6.1.0-11-2-amd64",
				"mgmt-ip": fmt.Sprintf("10.0.255.%d", i/4+1),
				"capability": []map[string]any{
					{"type": "Bridge", "enabled": true}, {"type": "Router", "enabled": true},
				},
			}},
			"port": map[string]any{
				"id":    map[string]string{"type": "local", "value": port},
				"descr": descr,
				"ttl":   "120",
			},
		}
		b, err := json.MarshalIndent(map[string]any{d.Netdev: body}, "      ", "  ")
		if err != nil {
			return err
		}
		neigh = append(neigh, "      "+string(b))
	}
	if len(health) == 0 {
		return nil
	}
	healthJSON := "{\n    \"health\": {\n" + strings.Join(health, ",\n") + "\n    }\n}\n"
	var lldpJSON string
	switch len(neigh) {
	case 0:
		lldpJSON = "{\n  \"lldp\": {\n    \n  }\n}\n"
	case 1:
		// One neighbour: lldpd prints "interface" as an object.
		lldpJSON = "{\n  \"lldp\": {\n    \"interface\": " + strings.TrimSpace(neigh[0]) + "\n  }\n}\n"
	default:
		lldpJSON = "{\n  \"lldp\": {\n    \"interface\": [\n" + strings.Join(neigh, ",\n") + "\n    ]\n  }\n}\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "devlink-health.json"), []byte(healthJSON), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "lldpcli-neighbors.json"), []byte(lldpJSON), 0o644)
}
