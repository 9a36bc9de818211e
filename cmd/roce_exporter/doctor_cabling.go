package main

import (
	"strings"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
)

// cablingLine is one port's LLDP neighbour in the doctor's report: the
// switch port an engineer walks to.
type cablingLine struct {
	// Subject is the port as findings name it (mlx5_0, or mlx5_0/2 on a
	// multi-port device); Interface its netdev (a bond slave on RoCE LAG).
	Subject    string `json:"subject"`
	Interface  string `json:"interface"`
	Switch     string `json:"switch,omitempty"`
	SwitchPort string `json:"switch_port,omitempty"`
	ChassisID  string `json:"chassis_id,omitempty"`
	PortDescr  string `json:"port_descr,omitempty"`
	// LinkDown: the last neighbour seen before the link went down.
	LinkDown bool `json:"link_down,omitempty"`
}

// text is the neighbour in p's language, whole formats each (the words
// firsthour27's messages.go has too).
func (c cablingLine) text(p *i18n.Printer) string {
	if c.Switch == "" {
		return tr(p, msgNoLLDPNeighbour)
	}
	s := tr(p, msgCabledTo, c.Switch, c.SwitchPort)
	if c.PortDescr != "" && c.PortDescr != c.SwitchPort {
		s = tr(p, msgCabledToDescr, c.Switch, c.SwitchPort, c.PortDescr)
	}
	if c.LinkDown {
		s = tr(p, msgCabledLastSeen, s)
	}
	return s
}

// cabling lists every Ethernet port's neighbour, nil when the lldp source
// was not read (lldpd not running, collector disabled): then the doctor
// prints nothing about cabling rather than "no neighbour" everywhere.
func cabling(snap *node.Snapshot) []cablingLine {
	if snap == nil || snap.Sources[node.SourceLLDP] != node.SourceOK {
		return nil
	}
	var out []cablingLine
	for _, d := range snap.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer != node.LinkLayerEthernet || p.Interface == "" {
				continue
			}
			subject := health.PortSubject(d, p)
			ifaces := p.BondSlaves
			if len(ifaces) == 0 {
				ifaces = []string{p.Interface}
			}
			for _, iface := range ifaces {
				c := cablingLine{Subject: node.PrintableName(subject), Interface: node.PrintableName(iface)}
				// A switch names itself: its strings are printed without
				// the escape sequences they may carry.
				if n := snap.LLDP[iface]; n != nil {
					c.Switch, c.SwitchPort, c.ChassisID, c.PortDescr, c.LinkDown = node.Printable(n.Switch()), node.Printable(n.SwitchPort()), node.Printable(n.ChassisID), node.Printable(n.PortDescr), n.LinkDown
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// printCabling writes the cabling section, each neighbour wrapped under
// its own column.
func printCabling(l *textLayout, lines []cablingLine) {
	if len(lines) == 0 {
		return
	}
	sw, iw := 0, 0
	for _, c := range lines {
		sw, iw = max(sw, displayWidth(c.Subject)), max(iw, displayWidth(c.Interface))
	}
	l.line(tr(l.opts.Printer, msgCablingTitle))
	for _, c := range lines {
		head := "  " + padRight(c.Subject, sw) + "  " + padRight(c.Interface, iw) + "  "
		for _, s := range wrap(c.text(l.opts.Printer), head, strings.Repeat(" ", displayWidth(head)), l.opts.Width) {
			l.line(s)
		}
	}
}

// cablingOf returns the neighbour text of a finding's subject (a port or
// an interface), "" when none is known.
func cablingOf(lines []cablingLine, subject string, p *i18n.Printer) string {
	var parts []string
	for _, c := range lines {
		if c.Switch != "" && (c.Subject == subject || c.Interface == subject) {
			parts = append(parts, c.text(p))
		}
	}
	return strings.Join(parts, "; ")
}
