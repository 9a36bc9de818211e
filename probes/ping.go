package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// pingRunner sends ICMP echo requests from a local compute address to a
// peer's compute address: the cheapest proof that the compute network
// routes between two nodes.
type pingRunner struct {
	count    int
	timeout  time.Duration
	interval time.Duration
}

var pingID atomic.Uint32

// listenICMP prefers an unprivileged datagram ICMP socket (allowed when
// net.ipv4.ping_group_range covers our group) and falls back to a raw
// socket (needs CAP_NET_RAW).
func listenICMP(local string) (*icmp.PacketConn, bool, error) {
	c, err := icmp.ListenPacket("udp4", local)
	if err == nil {
		return c, true, nil
	}
	raw, rerr := icmp.ListenPacket("ip4:icmp", local)
	if rerr != nil {
		return nil, false, fmt.Errorf("ICMP socket: datagram: %v; raw: %w", err, rerr)
	}
	return raw, false, nil
}

func (p *pingRunner) kind() string { return KindPing }

// readsNode: a ping needs nothing of the node, and is not gated on its load.
func (p *pingRunner) readsNode() bool { return false }

// ownTraffic: never asked, as ping reads no node.
func (p *pingRunner) ownTraffic(target, *Result, time.Duration) traffic { return traffic{} }

func (p *pingRunner) probe(ctx context.Context, t target, _ *node.Snapshot, res *Result) verdict {
	res.Command = []string{"icmp-echo", "from", t.LocalIP, "to", t.PeerIP}
	loss, rtts, err := p.ping(ctx, t.LocalIP, t.PeerIP)
	if err != nil {
		res.StderrTail = err.Error()
		return failed(ReasonExecError)
	}
	res.Ping = &Ping{LossRatio: loss}
	if len(rtts) > 0 {
		minR, maxR, sum := rtts[0], rtts[0], 0.0
		for _, r := range rtts {
			minR, maxR, sum = min(minR, r), max(maxR, r), sum+r
		}
		res.Latency = &Latency{Seconds: map[string]float64{"avg": sum / float64(len(rtts)), "min": minR, "max": maxR}}
	}
	switch {
	case loss >= 1:
		return verdict{ReasonTimeout, "no reply from " + t.PeerIP + ": check the link (roce_port_up), the peer's address (ip -br addr) and routing on the compute network."}
	case loss > 0:
		return verdict{ReasonBelowThreshold, fmt.Sprintf("%.0f%% of pings to %s were lost: a lossy compute network breaks RoCE; look for drops and link errors on both ends.", loss*100, t.PeerIP)}
	}
	return verdict{}
}

// ping returns the loss ratio and the round-trip times of the replies.
func (p *pingRunner) ping(ctx context.Context, local, peer string) (float64, []float64, error) {
	dst, err := netip.ParseAddr(peer)
	if err != nil || !dst.Is4() {
		return 0, nil, fmt.Errorf("peer address %q is not IPv4", peer)
	}
	conn, datagram, err := listenICMP(local)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	var to net.Addr = &net.IPAddr{IP: dst.AsSlice()}
	if datagram {
		to = &net.UDPAddr{IP: dst.AsSlice()}
	}
	id := int(pingID.Add(1)&0xffff) ^ os.Getpid()&0xffff // 16 bits, as ICMP carries
	sent := map[int]time.Time{}
	var rtts []float64
	buf := make([]byte, 1500)
	deadline := time.Now().Add(p.timeout)
	for seq := 0; seq < p.count; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("roce_exporter")}}
		wb, err := msg.Marshal(nil)
		if err != nil {
			return 0, nil, err
		}
		sent[seq] = time.Now()
		if _, err := conn.WriteTo(wb, to); err != nil {
			// An unreachable route is loss, not a probe error.
			var ne net.Error
			if !errors.As(err, &ne) {
				return 0, nil, err
			}
		}
		// Collect replies until the next send is due.
		next := time.Now().Add(p.interval)
		if seq == p.count-1 {
			next = deadline
		}
		for {
			if ctx.Err() != nil {
				return 0, nil, ctx.Err()
			}
			wait := time.Until(next)
			if wait <= 0 {
				break
			}
			conn.SetReadDeadline(time.Now().Add(wait))
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				break
			}
			if !sameHost(from, dst) {
				continue
			}
			rm, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || rm.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			echo, ok := rm.Body.(*icmp.Echo)
			// Datagram sockets get their ID rewritten by the kernel; the
			// sequence number and source address identify the reply.
			if !ok || (!datagram && echo.ID != id) {
				continue
			}
			if t, ok := sent[echo.Seq]; ok {
				rtts = append(rtts, time.Since(t).Seconds())
				delete(sent, echo.Seq)
			}
			if seq == p.count-1 && len(sent) == 0 {
				break
			}
		}
	}
	return 1 - float64(len(rtts))/float64(p.count), rtts, nil
}

func sameHost(a net.Addr, ip netip.Addr) bool {
	switch v := a.(type) {
	case *net.UDPAddr:
		x, ok := netip.AddrFromSlice(v.IP)
		return ok && x.Unmap() == ip
	case *net.IPAddr:
		x, ok := netip.AddrFromSlice(v.IP)
		return ok && x.Unmap() == ip
	}
	return false
}
