package probes

import (
	"context"
	"strings"

	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// KindNCCLGroup is the NCCL all_reduce run on a group of probes.nccl.
// group_size nodes.
const KindNCCLGroup = "nccl_group"

// runNCCLGroup runs this node's group of epoch when it leads it. The
// result's peer label is the other members joined with "+", so a slow group
// points at its nodes; the store keeps one group result per leader.
func (s *Scheduler) runNCCLGroup(ctx context.Context, epoch int64) *Result {
	n := s.opts.Plan.Probes.NCCL
	group, leads := schedule.NCCLGroupOf(s.opts.Plan.NodeNames(), n.GroupSize, epoch, s.self.Name)
	if !leads {
		return nil
	}
	var devs []string
	for _, l := range s.localLinks() {
		devs = append(devs, l.Device)
	}
	res := s.guarded(ctx, KindNCCLGroup, Link{Peer: strings.Join(group[1:], "+")}, func() *Result {
		r := s.nccl.runOn(ctx, group)
		r.Probe, r.Peer = KindNCCLGroup, strings.Join(group[1:], "+")
		return r
	}, devs...)
	if res != nil {
		s.store.Add(res)
	}
	return res
}
