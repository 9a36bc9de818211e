package health

import (
	"fmt"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// checkDCQCNParams reports DCQCN parameters that differ from the firmware
// defaults (node.DCQCNDefaults; cnp_dscp from the plan's expectations.cnp_dscp).
// A deliberate tuning is fine as long as every node of the model has it: the
// warning says what differs, the fleet's RoCEDCQCNParamsDrift says whether the
// nodes agree. The classic cause is not a person but an upgrade: firmware or
// a driver that brings other defaults to half the nodes, the same job then
// running slower there.
func checkDCQCNParams(e *env, r *results) {
	exp, hasPlan := e.expectations()
	if hasPlan && exp.ECN != nil && !*exp.ECN {
		r.skip(SubjectNode, Textf("the plan sets ecn: false: DCQCN does not run"))
		return
	}
	cnpDSCP := node.DefaultCNPDSCP
	if hasPlan && exp.CNPDSCP != nil {
		cnpDSCP = *exp.CNPDSCP
	}
	e.dcbTargets(r, "DCQCN", func(t *target, d *node.DCBState) {
		p := d.DCQCN
		if p == nil {
			r.skip(t.subject(), Textf("the DCQCN parameters of %s are not exposed: neither MLNX_OFED's /sys/class/net/%s/ecn/roce_rp/ nor (as root, with debugfs mounted) upstream's /sys/kernel/debug/mlx5/%s/cc_params/ shows them; unknown, which is not the default",
				t.netdev, t.netdev, orPlaceholder(t.pciAddress(), "<pci address>")))
			return
		}
		read := Textf("%d of %d parameters read from %s", len(p.Values), len(node.DCQCNParamNames), dcqcnWhere(p.Source))
		off := p.NonDefault(cnpDSCP)
		if len(off) == 0 {
			r.ok(t.subject(), Textf("DCQCN parameters are the firmware defaults (%s)", read))
			return
		}
		var said []Text
		var now []Text
		var mlx []string
		port := mlxconfigPort(t.pciAddress())
		for _, name := range off {
			want := node.DCQCNDefaults[name]
			if name == "cnp_dscp" {
				want = uint64(cnpDSCP)
			}
			said = append(said, Textf("%s %d (default %d)", name, p.Values[name], want))
			now = append(now, Textf("echo %d > %s", want, dcqcnFile(t, p.Source, name)))
			mlx = append(mlx, fmt.Sprintf("%s=%d", node.MlxconfigName(name, port), want))
		}
		pci := orPlaceholder(t.pciAddress(), "<pci address>")
		r.warn(t.subject(), Textf("DCQCN parameters differ from the firmware defaults: %s; %s. Unless every node of this NIC model was tuned alike on purpose, its RoCE flows slow down and recover unlike the others' (RoCEDCQCNParamsDrift compares the fleet)",
			JoinTexts(said, ", "), read),
			Textf("if it is not deliberate, set them back for good in the NIC's firmware configuration: drain the node first, then `mlxconfig -d %s -y set %s` and a firmware reset (`mlxfwreset -d %s -y reset`) or a reboot, which takes the link down; until then `%s` sets them at once (lost on reboot). If a boot-time script or tuning tool writes them, change it there; if the new values are deliberate, give every node of this model the same",
				pci, strings.Join(mlx, " "), pci, JoinTexts(now, "; ")))
	})
}

func dcqcnWhere(source string) Text {
	if source == node.DCQCNSourceDebugfs {
		return Textf("debugfs cc_params")
	}
	return Textf("MLNX_OFED's ecn/ files")
}

// dcqcnFile is where a parameter is written at once, where it was read.
func dcqcnFile(t *target, source, name string) Text {
	if source == node.DCQCNSourceDebugfs {
		return Textf("/sys/kernel/debug/mlx5/%s/cc_params/%s", orPlaceholder(t.pciAddress(), "<pci address>"), node.DebugfsCCParamFile(name))
	}
	role := Textf("roce_rp")
	for i, n := range node.DCQCNParamNames {
		if n == name && i >= node.DCQCNReactionPointParams {
			role = Textf("roce_np")
		}
	}
	return Textf("/sys/class/net/%s/ecn/%s/%s", t.netdev, role, name)
}

// mlxconfigPort is the _P<n> of mlxconfig's per-port parameters: a dual-port
// ConnectX has one PCI function per port, function 0 the first.
func mlxconfigPort(pci string) int {
	if strings.HasSuffix(pci, ".1") {
		return 2
	}
	return 1
}
