package probes

import (
	"fmt"
	"os"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// GPUDirect verdicts of one host of an NCCL run (HostGPUDirect.Verdict).
const (
	// GPUDirectUsed: some of the host's RDMA channels use GPUDirect RDMA.
	GPUDirectUsed = "used"
	// GPUDirectByDesign: off, as NCCL's own rule wants it: the GPU–NIC path
	// is beyond NCCL_NET_GDR_LEVEL (PXB by default). The run is judged on
	// its bandwidth.
	GPUDirectByDesign = "by_design"
	// GPUDirectMissing: off on this node although its GPUs and NICs share a
	// PCIe switch (PIX/PXB): the run fails as no_gdrdma.
	GPUDirectMissing = "missing"
	// GPUDirectCannotTell: off on a host whose GPU↔NIC relation this
	// exporter does not know (another node, and NCCL printed no distance
	// decision), or this node's when its GPUs were not read.
	GPUDirectCannotTell = "cannot_tell"
)

// HostGPUDirect is the GPUDirect RDMA verdict of one host of an NCCL run.
type HostGPUDirect struct {
	Host string `json:"host"`
	// Local: the host is this node, whose own GPU↔NIC relation decides.
	Local   bool   `json:"local,omitempty"`
	Verdict string `json:"verdict"`
	// Why says what decided the verdict, with the lines or relation it read.
	Why string `json:"why"`
	// suspect: a host that cannot be told whose neighbours use GPUDirect
	// RDMA, or whose NCCL says it has no way to: worth a warning.
	suspect bool
}

// gpuDirectView is what this node knows for the judgement: the names NCCL
// gives it in its log lines and its own GPU↔NIC relation.
type gpuDirectView struct {
	names    []string
	relation node.PCIeRelation
	// peerMem: the node offers GPUDirect RDMA (peer memory or DMA-BUF);
	// peerMemKnown false without GPUs read.
	peerMem, peerMemKnown bool
}

// localView reads the view from the snapshot taken before the run: the
// relation over the RDMA devices the run loads.
func localView(selfName string, snap *node.Snapshot, devices []string) gpuDirectView {
	v := gpuDirectView{names: []string{selfName}, relation: gpuNICRelation(snap, devices)}
	if h, err := os.Hostname(); err == nil {
		v.names = append(v.names, h)
	}
	v.peerMem, v.peerMemKnown = gpuDirectAvailable(snap)
	return v
}

// isLocal says whether NCCL's host name (gethostname cut at its first dot,
// src/misc/utils.cc getHostName) is this node.
func (v gpuDirectView) isLocal(host string) bool {
	if host == "" {
		return false
	}
	for _, n := range v.names {
		short, _, _ := strings.Cut(n, ".")
		if strings.EqualFold(short, host) {
			return true
		}
	}
	return false
}

// judgeGPUDirect judges GPUDirect RDMA per host: NCCL decides it per rank,
// for the rank's own GPU and NIC, so one host without it leaves "/GDRDMA"
// on the others' lines. Only this node's GPU↔NIC relation is known here;
// another host is judged only from NCCL's own decisions in its lines. It
// returns every host's verdict and the first host that fails.
func judgeGPUDirect(tr *parse.Transport, v gpuDirectView) ([]HostGPUDirect, *HostGPUDirect) {
	var out []HostGPUDirect
	var users []string
	for _, h := range tr.Hosts {
		if h.GDRDMAChannels > 0 {
			users = append(users, orUnnamed(h.Host))
		}
	}
	failing := -1
	for _, h := range tr.Hosts {
		if h.RDMAChannels() == 0 && !h.NoNICGDR() && !h.GDROffByDistance() {
			continue // nothing about GPUDirect to judge on this host
		}
		j := HostGPUDirect{Host: h.Host, Local: v.isLocal(h.Host)}
		j.Verdict, j.Why = judgeHostGPUDirect(h, j.Local, v, users)
		j.suspect = j.Verdict == GPUDirectCannotTell && !j.Local && (len(users) > 0 || h.NoNICGDR())
		if j.Verdict == GPUDirectMissing && failing < 0 {
			failing = len(out)
		}
		out = append(out, j)
	}
	if failing < 0 {
		return out, nil
	}
	return out, &out[failing]
}

func judgeHostGPUDirect(h parse.HostTransport, local bool, v gpuDirectView, users []string) (verdict, why string) {
	switch {
	case h.GDRDMAChannels > 0:
		return GPUDirectUsed, fmt.Sprintf("%d of its %d RDMA channels use GPUDirect RDMA (/GDRDMA)", h.GDRDMAChannels, h.RDMAChannels())
	case h.GDROffByDistance():
		why = fmt.Sprintf("NCCL turned GPUDirect RDMA off by its own distance rule (distance %s: the GPU–NIC path is beyond NCCL_NET_GDR_LEVEL, PXB by default)", strings.Join(h.DistanceDisabled, ", "))
		if local && v.relation.Direct() {
			why += fmt.Sprintf(", although this node's GPUs and NICs share a PCIe switch (%s): NCCL_NET_GDR_LEVEL is set lower, or NCCL reads another topology (a VM, NCCL_TOPO_FILE)", v.relation)
		}
		return GPUDirectByDesign, why
	case !local:
		why = "only this node's GPU↔NIC relation is known to this exporter, and NCCL printed no distance decision for this host"
		if len(users) > 0 {
			why += fmt.Sprintf(", while %s use GPUDirect RDMA", strings.Join(users, ", "))
		}
		if h.NoNICGDR() {
			why += fmt.Sprintf("; NCCL says \"GPU Direct RDMA Disabled\" for every HCA there (%s): neither a peer-memory module nor DMA-BUF works on it, a fault if its GPUs and NICs share a PCIe switch", strings.Join(h.NICGDRDisabled, ", "))
		}
		return GPUDirectCannotTell, why
	case v.relation == node.RelationUnknown:
		return GPUDirectCannotTell, "this node's GPU↔NIC relation is unknown (no NVIDIA GPU read, or the gpu collector is off)"
	case !v.relation.Direct():
		return GPUDirectByDesign, fmt.Sprintf("its GPUs reach its NICs at best through %s, beyond PXB, NCCL's default NCCL_NET_GDR_LEVEL: GPUDirect RDMA is off by design and the run is judged on its bandwidth", v.relation)
	case h.GDRLevelBelow(v.relation.String()):
		return GPUDirectByDesign, fmt.Sprintf("NCCL_NET_GDR_LEVEL is set to %s there and its GPUs and NICs are %s, beyond it: GPUDirect RDMA is off as configured", h.GDRLevel, v.relation)
	}
	why = fmt.Sprintf("its GPUs and NICs share a PCIe switch (%s), where NCCL uses GPUDirect RDMA by default", v.relation)
	if n := h.RDMAChannels(); n > 0 {
		why += fmt.Sprintf(", but none of its %d RDMA channels has /GDRDMA", n)
	}
	if h.NoNICGDR() {
		why += fmt.Sprintf("; NCCL says \"GPU Direct RDMA Disabled\" for every HCA (%s): it found neither a peer-memory module nor DMA-BUF", strings.Join(h.NICGDRDisabled, ", "))
	}
	if v.peerMemKnown && !v.peerMem {
		why += "; this node has no peer-memory module loaded (nvidia_peermem) and does not meet the DMA-BUF conditions (open GPU kernel modules, driver 515+, Linux 5.12+)"
	}
	return GPUDirectMissing, why
}

func orUnnamed(host string) string {
	if host == "" {
		return "(lines without a host)"
	}
	return host
}

// gpuDirectHint is the failing host's verdict before the reason's hint.
func gpuDirectHint(j *HostGPUDirect) string {
	return fmt.Sprintf("%s: %s. %s", j.Host, j.Why, Hint(ReasonNoGDRDMA))
}
