package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// draftWidth is the width the draft's comments are wrapped to.
const draftWidth = 100

// commentColumn is where a line comment starts when the line is shorter.
const commentColumn = 36

// YAML is the drafted plan: a whole plan of this one node, with a comment
// on every value saying where it came from.
func (d *Draft) YAML() []byte {
	var b bytes.Buffer
	for _, l := range wrapWords(fmt.Sprintf("Cluster plan drafted by `roce_exporter plan init` from node %s (%s). "+
		"Every value is what the node showed, except on the lines marked CONFIRM: a value it could not show, or one it does not meet "+
		"today, for which the usual value is written, so that the doctor keeps reporting the fault. Read those, then check the node with "+
		"`roce_exporter doctor --config.file=<this file>`. Add each other node with `roce_exporter plan init --add-to <this file>` run on it; "+
		"deploy/examples/cluster.yaml explains every key and the probes.", d.in.Node, d.in.Source), draftWidth-2) {
		b.WriteString("# " + l + "\n")
	}
	if len(d.Confirm) > 0 {
		fmt.Fprintf(&b, "#\n# To confirm (%d):\n", len(d.Confirm))
		for _, c := range d.Confirm {
			for i, l := range wrapWords(c, draftWidth-6) {
				if i == 0 {
					b.WriteString("#   - " + l + "\n")
				} else {
					b.WriteString("#     " + l + "\n")
				}
			}
		}
	}
	if len(d.notDrafted) > 0 {
		writeComment(&b, "", "Not drafted as compute interfaces: "+strings.Join(d.notDrafted, "; ")+".")
	}
	b.WriteString("\n")
	writeLine(&b, "", draftLine{key: "cluster", value: "my-cluster", out: true, comment: "a display name only"})
	b.WriteString("networks:\n")
	if d.management != nil {
		writeLine(&b, "  ", draftLine{key: "management", value: d.mgmtNetwork.String(), comment: fmt.Sprintf("the network of %s's management address", d.in.Node)})
	} else {
		writeLine(&b, "  ", draftLine{key: "management", value: "", confirm: true, comment: "CONFIRM: the network ssh and Prometheus reach the nodes on, such as 10.0.0.0/24"})
	}
	switch len(d.compute) {
	case 0:
		if d.linkLayer != "InfiniBand" {
			writeLine(&b, "  ", draftLine{key: "compute", value: "", confirm: true, comment: "CONFIRM: no compute interface has an address to take the network from"})
		}
	case 1:
		writeLine(&b, "  ", draftLine{key: "compute", value: d.compute[0].String(), comment: "the network of every compute address"})
	default:
		comment := "one network per rail, in rail order"
		if len(d.compute) < len(d.interfaces) {
			comment = "CONFIRM: the networks of the rails with an address today; add those of the others"
		}
		writeLine(&b, "  ", draftLine{key: "compute", comment: comment})
		for _, c := range d.compute {
			b.WriteString("    - " + c.String() + "\n")
		}
	}
	b.WriteString("expectations:\n")
	for _, l := range d.expectations {
		writeLine(&b, "  ", l)
	}
	b.WriteString("nodes:\n")
	b.WriteString(d.NodeYAML("  "))
	b.WriteString("\n")
	writeComment(&b, "", "probes: off until the doctor is clean on every node; deploy/examples/cluster.yaml shows the section.")
	return b.Bytes()
}

// NodeYAML is the node's entry in the plan's nodes list, its dash indented
// by indent.
func (d *Draft) NodeYAML(indent string) string {
	var b bytes.Buffer
	inner := indent + "  "
	if d.in.NodeNote != "" {
		writeComment(&b, indent, d.in.NodeNote)
	}
	b.WriteString(indent + "- name: " + yamlScalar(d.in.Node) + "\n")
	if d.management != nil {
		writeLine(&b, inner, draftLine{key: "management_ip", value: d.management.addr.Addr().String(), comment: d.management.comment})
	}
	writeLine(&b, inner, draftLine{key: "interfaces", comment: "rail order: by RDMA device name; list the rails in the same order on every node, rail i cabled alike everywhere"})
	for _, i := range d.interfaces {
		comment := i.comment
		lines := []draftLine{
			{key: "netdev", value: yamlScalar(i.netdev)},
			{key: "rdma_device", value: yamlScalar(i.device)},
		}
		if i.addr.IsValid() {
			lines = append(lines, draftLine{key: "ip", value: i.addr.String()})
		} else {
			lines = append(lines, draftLine{key: "ip", value: "", out: true})
		}
		// The comment goes above the entry when it does not fit beside it.
		if len(inner)+4+len("netdev: ")+len(i.netdev)+3+len(comment) > draftWidth || strings.Contains(comment, "CONFIRM") {
			writeComment(&b, inner+"  ", comment)
			comment = ""
		}
		lines[0].comment = comment
		for j, l := range lines {
			prefix := inner + "    "
			if j == 0 {
				prefix = inner + "  - "
			}
			writeLine(&b, prefix, l)
		}
	}
	return b.String()
}

// writeLine writes key: value with its comment beside it when it fits, else
// above it; a line left out is written as a comment.
func writeLine(b *bytes.Buffer, indent string, l draftLine) {
	text := l.key + ":"
	if l.value != "" {
		text += " " + l.value
	}
	if l.out {
		text = "# " + text
	}
	comment := l.comment
	if comment != "" && (len(indent)+max(len(text)+2, commentColumn-len(indent))+2+len(comment) > draftWidth) {
		// Above, wrapped, at the key's indent (a "- " item's is past the dash).
		writeComment(b, strings.Repeat(" ", len(indent)), comment)
		comment = ""
	}
	b.WriteString(indent + text)
	if comment != "" {
		b.WriteString(strings.Repeat(" ", max(2, commentColumn-len(indent)-len(text))) + "# " + comment)
	}
	b.WriteString("\n")
}

func writeComment(b *bytes.Buffer, indent, text string) {
	for _, l := range wrapWords(text, draftWidth-len(indent)-2) {
		b.WriteString(indent + "# " + l + "\n")
	}
}

// wrapWords breaks text at spaces into lines of at most width bytes (a
// longer word stays whole).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// yamlScalar writes s as a YAML scalar, quoted when it has to be.
func yamlScalar(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// AddNode adds the draft's node to the plan text (a plan file that loads,
// named filename for errors) at the end of its nodes list, keeping every
// byte of the file around it, and returns the new text. A node the plan
// already lists is an error. Where the node differs from the plan (an
// address outside its networks, an expectation it does not meet today), a
// CONFIRM comment above the entry says so.
func AddNode(filename string, text []byte, d *Draft) ([]byte, error) {
	plan, err := Parse(filename, text)
	if err != nil {
		return nil, err
	}
	if _, ok := plan.Node(d.in.Node); ok {
		return nil, fmt.Errorf("%s: node %s is already in the plan: remove its entry to draft it again, or give this node its own name (--node.name)", filename, d.in.Node)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", filename)
	}
	root := doc.Content[0]
	var nodes, next *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "nodes" {
			nodes = root.Content[i+1]
			if i+2 < len(root.Content) {
				next = root.Content[i+2]
			}
		}
	}
	if nodes == nil || nodes.Kind != yaml.SequenceNode || nodes.Style&yaml.FlowStyle != 0 || len(nodes.Content) == 0 {
		return nil, errors.New(filename + ": its nodes are not a block list (`nodes:` with `- name:` items): add the node by hand, from `roce_exporter plan init` without --add-to")
	}
	// The first item's dash: its mapping starts two columns after it.
	dash := strings.Repeat(" ", max(nodes.Content[0].Column-3, 0))
	entry := d.differences(plan, dash) + d.NodeYAML(dash)

	lines := strings.SplitAfter(string(text), "\n")
	at := len(lines)
	if next != nil {
		// Before the next top-level key and the comments and blank lines
		// above it, which are its own.
		at = next.Line - 1
		for at > 0 && (strings.TrimSpace(lines[at-1]) == "" || strings.HasPrefix(lines[at-1], "#")) {
			at--
		}
	} else {
		for at > 0 && strings.TrimSpace(lines[at-1]) == "" {
			at--
		}
	}
	var b strings.Builder
	for _, l := range lines[:at] {
		b.WriteString(l)
	}
	if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
		b.WriteString("\n")
	}
	b.WriteString(entry)
	for _, l := range lines[at:] {
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}

// differences are the CONFIRM comments for where the node differs from the
// plan it is added to.
func (d *Draft) differences(plan *Plan, indent string) string {
	var notes []string
	if d.management != nil && plan.Networks.Management.IsValid() && !plan.Networks.Management.Contains(d.management.addr.Addr()) {
		notes = append(notes, fmt.Sprintf("its management address %s is outside networks.management %s", d.management.addr.Addr(), plan.Networks.Management))
	}
	for rail, i := range d.interfaces {
		if !i.addr.IsValid() || len(plan.Networks.Compute) == 0 {
			continue
		}
		inside := false
		for _, c := range plan.Networks.Compute {
			inside = inside || c.Contains(i.addr.Addr())
		}
		if !inside {
			notes = append(notes, fmt.Sprintf("rail %d's %s is outside networks.compute", rail, i.addr))
		}
	}
	for _, l := range d.expectations {
		if want, ok := plan.expectationText(l.key); ok && !l.out && l.value != want {
			notes = append(notes, fmt.Sprintf("expectations.%s is %s in the plan, this node's draft has %s", l.key, want, l.value))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	var b bytes.Buffer
	writeComment(&b, indent, "CONFIRM: "+strings.Join(notes, "; ")+".")
	return b.String()
}

// expectationText is an expectation of the plan as the draft writes it.
func (p *Plan) expectationText(key string) (string, bool) {
	e := p.Expectations
	switch key {
	case "link_layer":
		return string(e.LinkLayer), true
	case "mtu":
		return fmt.Sprint(e.MTU), e.MTU > 0
	case "pfc_priority":
		if e.PFCPriority == nil {
			return "", false
		}
		return fmt.Sprint(*e.PFCPriority), true
	case "trust":
		return string(e.Trust), e.Trust != ""
	case "link_rate_gbps":
		return fmt.Sprint(e.LinkRateGbps), e.LinkRateGbps > 0
	case "roce_dscp":
		if e.RoCEDSCP == nil {
			return "", false
		}
		return fmt.Sprint(*e.RoCEDSCP), true
	}
	return "", false
}
