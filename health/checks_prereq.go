package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// memlockNote is what a node-level reading proves and what it does not.
const memlockNote = "a job's own limit is what its launcher gave it (check with `ulimit -l` inside the job, e.g. `mpirun … bash -c 'ulimit -l'`)"

// loginMemlock is what pam_limits gives a login session (ssh, so mpirun's
// remote ranks, and Slurm jobs that propagate the submitting shell's
// limits) of a user in domain "*": the last soft and hard memlock lines
// for "*" in reading order, and which other domains are raised.
func loginMemlock(ls []node.MemlockSetting) (soft, hard node.MemlockValue, star bool, raised []string, where string) {
	for _, l := range ls {
		if l.Domain == "*" {
			star = true
			if l.Type == "soft" || l.Type == "-" {
				soft = l.Soft
			}
			if l.Type == "hard" || l.Type == "-" {
				hard = l.Hard
			}
			where = fmt.Sprintf("%s:%d", l.File, l.Line)
			continue
		}
		if (l.Type == "soft" || l.Type == "-") && l.Soft == node.Unlimited && !slices.Contains(raised, l.Domain) {
			raised = append(raised, l.Domain)
		}
	}
	return soft, hard, star, raised, where
}

func checkMemlock(e *env, r *results) {
	h := e.snap.Host
	if h == nil || h.Memlock == nil {
		r.skip(SubjectNode, e.hostReason(Textf("the memlock limits")))
		return
	}
	m := h.Memlock
	status := StatusOK
	var msgs []Text
	var fixes []Text
	self := Textf("")
	if m.SelfKnown {
		capText := Textf("without CAP_IPC_LOCK")
		if m.SelfCapIPCLock {
			capText = Textf("with CAP_IPC_LOCK")
		}
		self = Textf("the exporter's own memlock limit is %s (soft), %s (hard), %s", m.SelfSoft, m.SelfHard, capText)
		if e.plan != nil && e.plan.Probes.Enabled && m.SelfSoft != node.Unlimited && !m.SelfCapIPCLock {
			status = StatusFail
			msgs = append(msgs, Textf("%s: the probes' ib_write_bw and NCCL inherit it, and registering their buffers fails (\"Couldn't allocate MR\", \"ibv_reg_mr … Cannot allocate memory\")", self))
			fixes = append(fixes, Textf("run the exporter with the probe drop-in deploy/systemd/roce_exporter-probes.conf (LimitMEMLOCK=infinity, AmbientCapabilities=CAP_IPC_LOCK) or the probe DaemonSet (capabilities IPC_LOCK)"))
			self = Textf("")
		}
	}
	switch {
	case !m.HostConfig:
		hint := Textf("the exporter runs in a container (%s) and sees the container's /etc, not the host's memlock defaults (mount the host's /etc/security and /etc/systemd and give --path.rootfs to judge them); RDMA job containers need `--ulimit memlock=-1` (docker) or the IPC_LOCK capability (Kubernetes securityContext.capabilities.add), as NVIDIA's RDMA pod examples set", m.Container)
		if !self.Empty() {
			hint = Textf("%s; %s", hint, self)
		}
		if status == StatusOK {
			r.skip(SubjectNode, hint)
			return
		}
		msgs = append(msgs, hint)
	default:
		soft, hard, star, raised, where := loginMemlock(m.Limits)
		systemd := Textf("systemd's DefaultLimitMEMLOCK is not set, so services (slurmd, containerd and dockerd with their containers) start with 8 MiB (64 KiB before Linux 5.16) unless their unit sets LimitMEMLOCK=")
		if s := m.SystemdDefault; s != nil {
			systemd = Textf("systemd's DefaultLimitMEMLOCK is %s (%s:%d) for services that set no LimitMEMLOCK=", s.Soft, s.File, s.Line)
		}
		switch {
		case star && soft == node.Unlimited:
			msgs = append(msgs, Textf("login sessions (ssh, mpirun's remote ranks) get an unlimited memlock limit (%s, hard %s); %s", where, hard, systemd))
		case len(raised) > 0 && (!star || soft != node.DefaultMemlock):
			msgs = append(msgs, Textf("memlock is unlimited for %s only (limits.conf/limits.d): other users' login sessions keep %s; %s", strings.Join(raised, ", "), softText(star, soft), systemd))
		default:
			if status != StatusFail {
				status = StatusWarn
			}
			msgs = append(msgs, Textf("login sessions (ssh, mpirun's remote ranks) get %s of locked memory: NCCL and perftest cannot register their buffers past it (\"ibv_reg_mr … Cannot allocate memory\", nccl-tests#206); %s", softText(star, soft), systemd))
			fixes = append(fixes, Textf("`printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/rdma.conf` (applies at the next login); for jobs started by a service, `LimitMEMLOCK=infinity` in its unit's drop-in (or `DefaultLimitMEMLOCK=infinity` in /etc/systemd/system.conf.d/memlock.conf and `systemctl daemon-reexec`); for containers `--ulimit memlock=-1` or the IPC_LOCK capability"))
		}
		if !self.Empty() {
			msgs = append(msgs, self)
		}
	}
	msg := Textf("%s; %s", JoinTexts(msgs, "; "), Textf(memlockNote))
	switch status {
	case StatusFail:
		r.fail(SubjectNode, msg, JoinTexts(fixes, "; "))
	case StatusWarn:
		r.warn(SubjectNode, msg, JoinTexts(fixes, "; "))
	default:
		r.ok(SubjectNode, msg)
	}
}

func softText(star bool, soft node.MemlockValue) string {
	if !star {
		return "the 8 MiB default (no memlock line for * in limits.conf or limits.d)"
	}
	return soft.String()
}

// checkNICModel compares the NIC models of the plan's rails on this node.
// NCCL and the probes pair rail i with rail i on every node, so one rail
// with another model (another speed, generation or port count) paces that
// rail of every job. The fleet side (rail i of this node against rail i of
// the others) is RoCENICModelDiffersOnRail's, on roce_device_info.
func checkNICModel(e *env, r *results) {
	models := map[string][]*target{}
	for _, t := range e.targets {
		if t.dev == nil {
			continue
		}
		key := modelKey(e, t.dev)
		models[key] = append(models[key], t)
	}
	if len(models) == 0 {
		r.skip(SubjectNode, Textf("no RDMA device of the plan's rails could be read"))
		return
	}
	keys := slices.Sorted(maps.Keys(models))
	slices.SortStableFunc(keys, func(a, b string) int { return len(models[b]) - len(models[a]) })
	majority := keys[0]
	tie := len(keys) > 1 && len(models[keys[1]]) == len(models[majority])
	var summary []Text
	for _, k := range keys {
		summary = append(summary, Textf("%s on rail %s", k, railList(models[k])))
	}
	for _, k := range keys {
		for _, t := range models[k] {
			subj := t.dev.Name
			switch {
			case len(keys) == 1:
				r.ok(subj, Textf("%s, the model of all %d rails", k, len(models[k])))
			case tie || k != majority:
				r.warn(subj, Textf("rail %s is %s while the node's rails differ (%s): rail i of every node is paired with rail i of the others, so a different model paces its rail in every job (the guide's step 5: a different NIC model on one rail)", railList([]*target{t}), k, JoinTexts(summary, "; ")),
					Textf("check the node's hardware against its order (`lspci -d 15b3: -nn`, `ibv_devinfo -d %s | grep -E 'board_id|vendor_part_id'`) and swap the card, or move it off the compute rails in the plan; the fleet-wide comparison of each rail is the RoCENICModelDiffersOnRail alert", t.dev.Name))
			default:
				r.ok(subj, Textf("%s, the model of most rails (%s)", k, JoinTexts(summary, "; ")))
			}
		}
	}
}

func railList(ts []*target) string {
	var out []string
	for _, t := range ts {
		if t.planned != nil {
			out = append(out, fmt.Sprint(t.planned.Rail))
		} else {
			out = append(out, t.subject())
		}
	}
	return strings.Join(out, ", ")
}
