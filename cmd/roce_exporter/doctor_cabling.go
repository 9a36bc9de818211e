package main

import (
	"fmt"
	"io"
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
		return p.Sprintf("no LLDP neighbour")
	}
	s := p.Sprintf("cabled to %[1]s %[2]s", c.Switch, c.SwitchPort)
	if c.PortDescr != "" && c.PortDescr != c.SwitchPort {
		s = p.Sprintf("cabled to %[1]s %[2]s (%[3]q)", c.Switch, c.SwitchPort, c.PortDescr)
	}
	if c.LinkDown {
		s = p.Sprintf("%[1]s, last seen before the link went down", s)
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
				c := cablingLine{Subject: node.LabelUTF8(subject), Interface: node.LabelUTF8(iface)}
				if n := snap.LLDP[iface]; n != nil {
					c.Switch, c.SwitchPort, c.ChassisID, c.PortDescr, c.LinkDown = n.Switch(), n.SwitchPort(), n.ChassisID, n.PortDescr, n.LinkDown
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// printCabling writes the cabling section.
func printCabling(w io.Writer, lines []cablingLine, p *i18n.Printer) {
	if len(lines) == 0 {
		return
	}
	sw, iw := 0, 0
	for _, c := range lines {
		sw, iw = max(sw, len(c.Subject)), max(iw, len(c.Interface))
	}
	fmt.Fprintln(w, p.Sprintf("cabling (LLDP neighbours from lldpd):"))
	for _, c := range lines {
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", sw, c.Subject, iw, c.Interface, c.text(p))
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
