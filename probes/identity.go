package probes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// identity is whether this node is the plan entry it runs as. An exporter
// started under another node's name (a copied unit file, a wrong
// --node.name) would run that node's pair tests from the wrong NICs and
// serve tests in its name: its failures would blame the real node, and its
// passes would hide the real node's faults.
type identity int

const (
	// identityUnknown: the node's addresses could not be read (no netdev
	// source, no GID table, a plan without compute IPs); the probes run.
	identityUnknown identity = iota
	// identityVerified: a planned compute IP of the entry is on the node.
	identityVerified
	// identityMismatch: the node's addresses were read and none of the
	// entry's compute IPs is among them; the pair probes and ping neither
	// run nor serve under that name.
	identityMismatch
)

// identityOf judges the node in snap against its plan entry self: the
// addresses of its RDMA interfaces (when read) and the IPv4 addresses of
// its RoCE GIDs against the compute IPs the plan gives self. A mismatch says
// which plan node the addresses found belong to, when one does.
func identityOf(snap *node.Snapshot, self *config.Node, plan *config.Plan) (identity, string) {
	var planned []netip.Addr
	for _, i := range self.Interfaces {
		if i.Address.IsValid() {
			planned = append(planned, i.IP())
		}
	}
	if snap == nil || len(planned) == 0 {
		return identityUnknown, ""
	}
	have := map[netip.Addr]bool{}
	for _, i := range snap.Interfaces {
		if i.AddressesKnown {
			for _, a := range i.Addresses {
				have[a.Addr().Unmap()] = true
			}
		}
	}
	for _, p := range snap.Ports() {
		for _, g := range p.GIDs {
			if a, ok := g.IPv4(); ok {
				have[a] = true
			}
		}
	}
	if len(have) == 0 {
		return identityUnknown, ""
	}
	for _, a := range planned {
		if have[a] {
			return identityVerified, ""
		}
	}
	var found []netip.Addr // the IPv4 ones: link-local IPv6 says nothing of the plan
	for a := range have {
		if a.Is4() {
			found = append(found, a)
		}
	}
	slices.SortFunc(found, func(a, b netip.Addr) int { return a.Compare(b) })
	var owners []string
	for _, a := range found {
		if owner := ownerOf(plan, a); owner != "" && owner != self.Name && !slices.Contains(owners, owner) {
			owners = append(owners, owner)
		}
	}
	why := fmt.Sprintf("none of %s's compute IPs in the plan (%s) is on this node's RDMA interfaces or in its GID tables, which hold %s",
		self.Name, joinAddrs(planned), joinAddrs(found))
	if len(owners) > 0 {
		why += fmt.Sprintf(": the plan gives those to %s, so this is probably %s started as %s (check --node.name)", strings.Join(owners, ", "), owners[0], self.Name)
	}
	return identityMismatch, why
}

func ownerOf(plan *config.Plan, a netip.Addr) string {
	for _, n := range plan.Nodes {
		for _, i := range n.Interfaces {
			if i.Address.IsValid() && i.IP() == a {
				return n.Name
			}
		}
	}
	return ""
}

func joinAddrs(as []netip.Addr) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, ", ")
}

// judgeIdentity judges the node read in snap (nil: not read, which leaves the
// last judgement) against this node's plan entry, records it for the
// metrics and logs a change once.
func (s *Scheduler) judgeIdentity(snap *node.Snapshot) identity {
	s.identityMu.Lock()
	defer s.identityMu.Unlock()
	if snap == nil {
		return s.identity
	}
	id, why := identityOf(snap, s.self, s.opts.Plan)
	if id == identityUnknown && s.identity != identityUnknown {
		return s.identity // a read without addresses does not undo what was seen
	}
	if id != s.identity {
		switch id {
		case identityMismatch:
			s.logger.Error("this node is not the plan's "+s.self.Name+": the pair probes and ping neither run nor serve under that name", "why", why)
		case identityVerified:
			if s.identity == identityMismatch {
				s.logger.Info("this node's compute IPs now match the plan's " + s.self.Name + ": the probes run again")
			}
		}
		s.identity = id
		s.store.SetIdentityMismatch(id == identityMismatch)
	}
	return id
}
