package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/reader"
)

// Exit codes of plan init.
const (
	exitDraftIncomplete = 1 // printed, but a person must fill in what the node could not show
)

type planCommand struct {
	a          *app
	initCmd    *kingpin.CmdClause
	collectors *collector.Flags
	addTo      *string
	write      *bool
}

func newPlanCommand(a *app) *planCommand {
	p := &planCommand{a: a}
	cmd := a.kp.Command("plan", "Draft the cluster plan from the node itself.")
	p.initCmd = cmd.Command("init", "Read this node as the doctor does and print a draft of the cluster plan (YAML) on standard output: the management and compute networks, this node's compute interfaces in rail order with their RDMA devices and IPs, its management IP, and the expectations its ports meet today. Values the node could not show, or does not meet today (MTU 1500 on a RoCE port), are not taken as the expectation: the usual value is written with a CONFIRM comment. Exit 0 when the draft loads as a plan, 1 when a CONFIRM line must be filled in first (the draft is printed all the same, the problems on standard error), 2 on a usage error, 3 when the node has no RDMA port to draft.")
	p.addTo = p.initCmd.Flag("add-to", "Add this node to the plan in FILE instead: print FILE with this node's entry at the end of its nodes (its comments and layout kept), and CONFIRM comments where the node differs from the plan.").PlaceHolder("FILE").String()
	p.write = p.initCmd.Flag("write", "With --add-to: write the result back to FILE (atomically) instead of printing it; refused when the result does not load.").Bool()
	p.collectors = collector.RegisterSourceFlags(p.initCmd)
	return p
}

func (p *planCommand) run() int {
	if *p.write && *p.addTo == "" {
		fmt.Fprintln(os.Stderr, "roce_exporter plan init: --write needs --add-to FILE")
		return exitUsage
	}
	opts, ropts, err := p.a.options(p.collectors, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %v\n", err)
		return exitUsage
	}
	ropts.Refresh = 0
	rd, err := reader.New(ropts, p.a.logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %v\n", err)
		return exitUsage
	}
	defer rd.Close()
	snap := rd.Read().Snapshot
	in := config.DraftInput{Node: opts.NodeName, Snapshot: snap, DefaultRoute: reader.DefaultRouteInterface(ropts), Source: "this machine"}
	if addrs, ok := reader.HostAddresses(ropts); ok {
		in.Addresses = addrs
	}
	if opts.Sample != "" {
		in.Source = "sample node " + opts.Sample + ", not this machine"
		if *p.a.nodeName == "" {
			in.NodeNote = "this is this machine's host name, not the sample node's: give the name with --node.name"
		}
	}
	draft := config.NewDraft(in)
	if draft.Ports == 0 {
		found, _ := describeNode(snap, filepath.Join(ropts.SysPath, "class", "infiniband"))
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: nothing to draft: %s; a plan lists the compute interfaces of RDMA nodes\n", found)
		return exitNothingToCheck
	}
	if *p.addTo == "" {
		out := draft.YAML()
		os.Stdout.Write(out)
		return p.check("draft", "the draft does not load until its CONFIRM lines are filled in (the line numbers are the draft's)", out)
	}
	text, err := safefile.ReadRegular(*p.addTo, config.MaxPlanBytes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: --add-to: %v\n", err)
		return exitUsage
	}
	merged, err := config.AddNode(*p.addTo, text, draft)
	var invalid config.ValidationErrors
	switch {
	case errors.As(err, &invalid):
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: --add-to: the plan does not load; fix it first:\n%v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %v\n", err)
		return exitUsage
	}
	why := fmt.Sprintf("with %s added, %s does not load (the line numbers are those of the printed plan); fix what it says, on the node or in the plan, and add it again", opts.NodeName, *p.addTo)
	if !*p.write {
		os.Stdout.Write(merged)
		return p.check(*p.addTo, why, merged)
	}
	if code := p.check(*p.addTo, why, merged); code != 0 {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %s is left as it was\n", *p.addTo)
		return code
	}
	st, err := os.Stat(*p.addTo)
	if err == nil {
		err = safefile.WriteAtomic(*p.addTo, merged, st.Mode().Perm())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(os.Stderr, "roce_exporter plan init: added %s to %s\n", opts.NodeName, *p.addTo)
	return exitOK
}

// check loads what plan init wrote (named file) as the doctor will, and
// says on stderr what keeps it from loading (why: what to do about it), and
// what the plan warns about.
func (p *planCommand) check(file, why string, text []byte) int {
	plan, err := config.Parse(file, text)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: %s:\n%v\n", why, err)
		return exitDraftIncomplete
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(os.Stderr, "roce_exporter plan init: warning: %v\n", w)
	}
	return exitOK
}
