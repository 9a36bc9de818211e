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

// writeDevlinkLLDP writes the `devlink health show -j` and `lldpcli -f json0
// show neighbors details` captures of the node's Ethernet physical functions, in
// the shapes iproute2 and lldpd 1.0.16 print (see
// internal/devlinknl/testdata/SOURCES and internal/lldpcli/testdata/SOURCES).
// A port whose link is down has no neighbour: lldpd ages it out.
func writeDevlinkLLDP(dir string, n Node, nics map[string]NIC) error {
	var health []string
	var neigh []json0Neighbor
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
		neigh = append(neigh, json0Neighbor{
			Name: d.Netdev, Via: "LLDP", RID: fmt.Sprint(i/4 + 1), Age: "12 days, 03:11:42",
			Chassis: []json0Chassis{{
				ID:         []json0Value{{Type: "mac", Value: chassisMAC}},
				Name:       []json0Value{{Value: chassis}},
				Descr:      []json0Value{{Value: "SONiC Software Version: SONiC.202311.1 - HwSku: Mellanox-SN5600 - Distribution: Debian 12.5 - Kernel: 6.1.0-11-2-amd64"}},
				MgmtIP:     []json0Value{{Value: fmt.Sprintf("10.0.255.%d", i/4+1)}},
				Capability: []json0Capability{{Type: "Bridge", Enabled: true}, {Type: "Router", Enabled: true}},
			}},
			Port: []json0Port{{
				ID:    []json0Value{{Type: "local", Value: port}},
				Descr: []json0Value{{Value: descr}},
				TTL:   []json0Value{{Value: "120"}},
			}},
		})
		if sw := nic.Switch; sw != nil {
			nb := &neigh[len(neigh)-1]
			if sw.MFS > 0 {
				nb.Port[0].MFS = []json0Value{{Value: fmt.Sprint(sw.MFS)}}
			}
			if sw.MAU != "" {
				nb.Port[0].Autoneg = []json0Autoneg{{Supported: true, Enabled: true,
					Advertised: []json0Advertised{{Type: "1000Base-T", HD: false, FD: true}}, Current: []json0Value{{Value: sw.MAU}}}}
			}
			for _, v := range sw.VLANs {
				nb.VLAN = append(nb.VLAN, json0VLAN{ID: fmt.Sprint(v), PVID: v == sw.PVID, Value: fmt.Sprintf("vlan%d", v)})
			}
		}
	}
	if len(health) == 0 {
		return nil
	}
	healthJSON := "{\n    \"health\": {\n" + strings.Join(health, ",\n") + "\n    }\n}\n"
	// json0 keeps its arrays whatever the count: {"lldp": [{}]} for none.
	section := map[string]any{}
	if len(neigh) > 0 {
		section["interface"] = neigh
	}
	lldpJSON, err := json.MarshalIndent(map[string]any{"lldp": []any{section}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "devlink-health.json"), []byte(healthJSON), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "lldpcli-neighbors.json"), append(lldpJSON, '\n'), 0o644)
}

// The json0 elements of a neighbour the fixtures write, in lldpd's order.
type (
	json0Value struct {
		Type  string `json:"type,omitempty"`
		Value string `json:"value"`
	}
	json0Capability struct {
		Type    string `json:"type"`
		Enabled bool   `json:"enabled"`
	}
	json0Chassis struct {
		ID         []json0Value      `json:"id"`
		Name       []json0Value      `json:"name"`
		Descr      []json0Value      `json:"descr"`
		MgmtIP     []json0Value      `json:"mgmt-ip"`
		Capability []json0Capability `json:"capability"`
	}
	json0Port struct {
		ID      []json0Value   `json:"id"`
		Descr   []json0Value   `json:"descr"`
		TTL     []json0Value   `json:"ttl"`
		MFS     []json0Value   `json:"mfs,omitempty"`
		Autoneg []json0Autoneg `json:"auto-negotiation,omitempty"`
	}
	// The IEEE 802.3 MAC/PHY TLV and 802.1 VLANs, as `show neighbors
	// details` writes them.
	json0Advertised struct {
		Type string `json:"type"`
		HD   bool   `json:"hd"`
		FD   bool   `json:"fd"`
	}
	json0Autoneg struct {
		Supported  bool              `json:"supported"`
		Enabled    bool              `json:"enabled"`
		Advertised []json0Advertised `json:"advertised"`
		Current    []json0Value      `json:"current"`
	}
	json0VLAN struct {
		ID    string `json:"vlan-id"`
		PVID  bool   `json:"pvid"`
		Value string `json:"value,omitempty"`
	}
	json0Neighbor struct {
		Name    string         `json:"name"`
		Via     string         `json:"via"`
		RID     string         `json:"rid"`
		Age     string         `json:"age"`
		Chassis []json0Chassis `json:"chassis"`
		Port    []json0Port    `json:"port"`
		VLAN    []json0VLAN    `json:"vlan,omitempty"`
	}
)
