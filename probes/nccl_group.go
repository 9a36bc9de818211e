package probes

import (
	"context"
	"strings"

	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// runNCCLGroup runs this node's group of epoch when it leads it. The
// result's peer label is the other members joined with "+", so a slow group
// points at its nodes; the store keeps one group result per leader.
func (s *Scheduler) runNCCLGroup(ctx context.Context, epoch int64) *Result {
	n := s.opts.Plan.Probes.NCCL
	group, leads := schedule.NCCLGroupOf(s.opts.Plan.NodeNames(), n.GroupSize, epoch, s.self.Name)
	if !leads {
		return nil
	}
	t := target{Link: Link{Peer: strings.Join(group[1:], "+")}, nodes: group, devices: s.localDevices()}
	res := s.guarded(ctx, KindNCCLGroup, t, func() *Result { return s.measure(ctx, s.ncclGroup, t) })
	if res != nil {
		s.store.Add(res)
	}
	return res
}
