package node

import (
	"bufio"
	"bytes"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// CapIPCLock is CAP_IPC_LOCK's bit (include/uapi/linux/capability.h): a
// process that has it may pin memory past RLIMIT_MEMLOCK, and ib_umem_get
// lets it register any amount.
const CapIPCLock = 14

// ParseProcLimitsMemlock reads the "Max locked memory" line of
// /proc/<pid>/limits (fs/proc/base.c lnames: limit, soft, hard, unit):
//
//	Max locked memory         8388608              8388608              bytes
//	Max locked memory         unlimited            unlimited            bytes
func ParseProcLimitsMemlock(text []byte) (soft, hard MemlockValue, err error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Max locked memory")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return 0, 0, fmt.Errorf("limits line %q has no soft and hard value", sc.Text())
		}
		if soft, err = procLimit(f[0]); err == nil {
			hard, err = procLimit(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("no \"Max locked memory\" line")
}

func procLimit(s string) (MemlockValue, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("limit %q is neither bytes nor unlimited", s)
	}
	return MemlockValue(n), nil
}

// HasCapability reports whether /proc/<pid>/status's effective set
// (CapEff, hexadecimal) holds the capability bit.
func HasCapability(status []byte, capBit uint) bool {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && capBit < bits.UintSize && n&(1<<capBit) != 0
		}
	}
	return false
}

// ParseLimitsConf returns the memlock lines of a pam_limits file
// (limits.conf(5): "<domain> <type> <item> <value>", value in KiB or
// unlimited/infinity/-1, '#' comments). Malformed lines are skipped, as
// pam_limits skips them.
func ParseLimitsConf(file string, data []byte) []MemlockSetting {
	var out []MemlockSetting
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) != 4 || strings.ToLower(f[2]) != "memlock" {
			continue
		}
		var v MemlockValue
		switch strings.ToLower(f[3]) {
		case "unlimited", "infinity", "-1":
			v = Unlimited
		default:
			kib, err := strconv.ParseUint(f[3], 10, 64)
			if err != nil || kib > uint64(Unlimited)>>10 {
				continue
			}
			v = MemlockValue(kib << 10)
		}
		s := MemlockSetting{File: file, Line: n, Domain: f[0], Type: f[1]}
		switch f[1] {
		case "soft":
			s.Soft = v
		case "hard":
			s.Hard = v
		case "-":
			s.Soft, s.Hard = v, v
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

// ParseSystemdMemlock returns the last DefaultLimitMEMLOCK= of a systemd
// manager configuration file ([Manager] section; systemd.exec(5)'s
// LimitMEMLOCK= syntax: a size with the base-1024 suffixes K, M, G, T, P,
// E, "infinity", or "soft:hard"), nil when it sets none.
func ParseSystemdMemlock(file string, data []byte) (*MemlockSetting, error) {
	var out *MemlockSetting
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	section := ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasPrefix(line, "["):
			section = line
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section != "[Manager]" || strings.TrimSpace(key) != "DefaultLimitMEMLOCK" {
			continue
		}
		value = strings.TrimSpace(value)
		if value == "" {
			// An empty assignment resets to systemd's own default.
			out = nil
			continue
		}
		softText, hardText, pair := strings.Cut(value, ":")
		if !pair {
			hardText = softText
		}
		soft, err := systemdSize(softText)
		if err != nil {
			return out, fmt.Errorf("line %d: DefaultLimitMEMLOCK=%s: %w", n, value, err)
		}
		hard, err := systemdSize(hardText)
		if err != nil {
			return out, fmt.Errorf("line %d: DefaultLimitMEMLOCK=%s: %w", n, value, err)
		}
		out = &MemlockSetting{File: file, Line: n, Soft: soft, Hard: hard}
	}
	return out, nil
}

func systemdSize(s string) (MemlockValue, error) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return Unlimited, nil
	}
	mult := uint64(1)
	if s != "" {
		if i := strings.IndexByte("BKMGTPE", s[len(s)-1]); i >= 0 {
			mult = 1 << (10 * i)
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > uint64(Unlimited)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return MemlockValue(n * mult), nil
}

// String writes a limit the way ulimit -l and the fixes do: "unlimited",
// else KiB, MiB or GiB.
func (v MemlockValue) String() string {
	switch {
	case v == Unlimited:
		return "unlimited"
	case v >= 1<<30 && v%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", v>>30)
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", v>>10)
	}
	return fmt.Sprintf("%d bytes", uint64(v))
}
