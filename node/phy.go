package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// PHY is the physical-layer state of an interface from the kernel's
// ethtool netlink: FEC and its standard statistics, and why a link that is
// down is down.
type PHY struct {
	Interface string
	// FECMode is the active FEC encoding as ethtool names it ("RS",
	// "BaseR", "None", "LLRS"), "" when unknown.
	FECMode string
	// FECCorrected and FECUncorrectable are the IEEE 802.3 30.5.1.1.17/18
	// block counters, nil when the driver does not count them. Corrected
	// bits are not kept: drivers report them in `ethtool -S` too
	// (roce_phy_fec_corrected_bit_errors_total).
	FECCorrected, FECUncorrectable *FECCounter
	// LinkKnown: the driver reported the link; Link is "Link detected".
	LinkKnown, Link bool
	// ExtState and ExtSubstate are the kernel's reason for a link that is
	// down (LinkExtStateName), "" when the driver gives none.
	ExtState, ExtSubstate string
}

// FECCounter is a FEC block counter: the port total and, where the driver
// counts them, per lane (PCS lane for BaseR, FEC lane for RS).
type FECCounter struct {
	Total uint64
	Lanes []uint64
}

// The extended link states (include/uapi/linux/ethtool.h enum
// ethtool_link_ext_state), by value, as snake_case label values, and the
// names ethtool prints for them (netlink/settings.c), for replay.
var linkExtStates = []struct{ name, ethtool string }{
	{"autoneg", "Autoneg"},
	{"link_training_failure", "Link training failure"},
	{"link_logical_mismatch", "Logical mismatch"},
	{"bad_signal_integrity", "Bad signal integrity"},
	{"no_cable", "No cable"},
	{"cable_issue", "Cable issue"},
	{"eeprom_issue", "EEPROM issue"},
	{"calibration_failure", "Calibration failure"},
	{"power_budget_exceeded", "Power budget exceeded"},
	{"overheat", "Overheat"},
	{"module", "Module"},
}

// linkExtSubstates lists, per state value, its substates from 1 up.
var linkExtSubstates = map[int][]struct{ name, ethtool string }{
	0: {{"no_partner_detected", "No partner detected"}, {"ack_not_received", "Ack not received"},
		{"next_page_exchange_failed", "Next page exchange failed"},
		{"no_partner_detected_force_mode", "No partner detected during force mode"},
		{"fec_mismatch_during_override", "FEC mismatch during override"}, {"no_hcd", "No HCD"}},
	1: {{"kr_frame_lock_not_acquired", "KR frame lock not acquired"}, {"kr_link_inhibit_timeout", "KR link inhibit timeout"},
		{"kr_link_partner_did_not_set_receiver_ready", "KR Link partner did not set receiver ready"},
		{"remote_fault", "Remote side is not ready yet"}},
	2: {{"pcs_did_not_acquire_block_lock", "PCS did not acquire block lock"}, {"pcs_did_not_acquire_am_lock", "PCS did not acquire AM lock"},
		{"pcs_did_not_get_align_status", "PCS did not get align_status"}, {"fc_fec_is_not_locked", "FC FEC is not locked"},
		{"rs_fec_is_not_locked", "RS FEC is not locked"}},
	3: {{"large_number_of_physical_errors", "Large number of physical errors"}, {"unsupported_rate", "Unsupported rate"},
		{"serdes_reference_clock_lost", "Serdes reference clock lost"}, {"serdes_alos", "Serdes ALOS"}},
	5:  {{"unsupported_cable", "Unsupported cable"}, {"cable_test_failure", "Cable test failure"}},
	10: {{"cmis_not_ready", "CMIS module is not in ModuleReady state"}},
}

// LinkExtStateName names an extended link state value, "state_<n>" for one
// this table does not know yet; "" for a negative (absent) value.
func LinkExtStateName(v int) string {
	switch {
	case v < 0:
		return ""
	case v < len(linkExtStates):
		return linkExtStates[v].name
	}
	return "state_" + strconv.Itoa(v)
}

// LinkExtSubstateName names a substate of a state, "" when absent.
func LinkExtSubstateName(state, sub int) string {
	if state < 0 || sub <= 0 {
		return ""
	}
	if subs := linkExtSubstates[state]; sub <= len(subs) {
		return subs[sub-1].name
	}
	return "substate_" + strconv.Itoa(sub)
}

// ParseLinkDetected reads the "Link detected:" line of `ethtool <if>`
// output: "Link detected: no (No cable)" or "Link detected: no (Autoneg,
// No partner detected)". ok is false when the output has no such line.
func ParseLinkDetected(r io.Reader) (link bool, state, substate string, ok bool, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		rest, found := strings.CutPrefix(s, "Link detected:")
		if !found {
			continue
		}
		rest = strings.TrimSpace(rest)
		val, reason, _ := strings.Cut(rest, " ")
		switch val {
		case "yes":
			link = true
		case "no":
		default:
			return false, "", "", false, fmt.Errorf("Link detected: %q", rest)
		}
		reason = strings.TrimSpace(reason)
		if reason == "" {
			return link, "", "", true, nil
		}
		reason = strings.TrimSuffix(strings.TrimPrefix(reason, "("), ")")
		st, sub, _ := strings.Cut(reason, ", ")
		state, substate = "", ""
		si := -1
		for i, e := range linkExtStates {
			if e.ethtool == st {
				state, si = e.name, i
			}
		}
		if state == "" {
			if n, err := strconv.Atoi(st); err == nil {
				state, si = LinkExtStateName(n), n
			} else {
				return false, "", "", false, fmt.Errorf("unknown link state %q", st)
			}
		}
		if sub != "" {
			for _, e := range linkExtSubstates[si] {
				if e.ethtool == sub {
					substate = e.name
				}
			}
			if substate == "" {
				if n, err := strconv.Atoi(sub); err == nil {
					substate = LinkExtSubstateName(si, n)
				} else {
					return false, "", "", false, fmt.Errorf("unknown link substate %q", sub)
				}
			}
		}
		return link, state, substate, true, nil
	}
	return false, "", "", false, sc.Err()
}

// ParseShowFEC reads `ethtool -I --show-fec <if>` output: the active
// encoding and the corrected / uncorrectable block counters with their
// "Lane N:" lines (ethtool's netlink/fec.c format).
func ParseShowFEC(r io.Reader) (*PHY, error) {
	p := &PHY{}
	sc := bufio.NewScanner(r)
	var cur *FECCounter
	seen := false
	for sc.Scan() {
		raw := sc.Text()
		s := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(s, "FEC parameters for"):
			seen = true
		case strings.HasPrefix(s, "Active FEC encoding:"):
			p.FECMode = strings.TrimSpace(strings.TrimPrefix(s, "Active FEC encoding:"))
			seen = true
		case strings.HasPrefix(s, "Lane "):
			if cur == nil {
				return nil, fmt.Errorf("lane line before a counter: %q", s)
			}
			_, v, ok := strings.Cut(s, ":")
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("bad lane line %q", s)
			}
			cur.Lanes = append(cur.Lanes, n)
		default:
			name, v, ok := strings.Cut(s, ":")
			if !ok {
				continue
			}
			var dst **FECCounter
			switch name {
			case "corrected_blocks":
				dst = &p.FECCorrected
			case "uncorrectable_blocks":
				dst = &p.FECUncorrectable
			default:
				cur = nil
				continue
			}
			// Newer ethtool prints "N [ per_lane: a, b ]" on one line.
			total, perLane, _ := strings.Cut(strings.TrimSpace(v), " ")
			n, err := strconv.ParseUint(total, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad counter line %q", s)
			}
			cur = &FECCounter{Total: n}
			if lanes, ok := strings.CutPrefix(strings.TrimSpace(perLane), "[ per_lane:"); ok {
				for _, f := range strings.Split(strings.TrimSuffix(strings.TrimSpace(lanes), "]"), ",") {
					if f = strings.TrimSpace(f); f == "" {
						continue
					}
					l, err := strconv.ParseUint(f, 10, 64)
					if err != nil {
						return nil, fmt.Errorf("bad lane value in %q", s)
					}
					cur.Lanes = append(cur.Lanes, l)
				}
			}
			*dst = cur
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, errors.New("not `ethtool --show-fec` output")
	}
	return p, nil
}
