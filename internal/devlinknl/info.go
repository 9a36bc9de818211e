package devlinknl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

// The commands and attributes of `devlink dev info` (include/uapi/linux/devlink.h).
const (
	cmdGet     = 1  // DEVLINK_CMD_GET: the devlink instances
	cmdInfoGet = 51 // DEVLINK_CMD_INFO_GET

	attrInfoDriverName     = 98  // DEVLINK_ATTR_INFO_DRIVER_NAME, string
	attrInfoSerialNumber   = 99  // DEVLINK_ATTR_INFO_SERIAL_NUMBER, string
	attrInfoVersionFixed   = 100 // DEVLINK_ATTR_INFO_VERSION_FIXED, nested
	attrInfoVersionRunning = 101 // DEVLINK_ATTR_INFO_VERSION_RUNNING, nested
	attrInfoVersionStored  = 102 // DEVLINK_ATTR_INFO_VERSION_STORED, nested
	attrInfoVersionName    = 103 // DEVLINK_ATTR_INFO_VERSION_NAME, string
	attrInfoVersionValue   = 104 // DEVLINK_ATTR_INFO_VERSION_VALUE, string
)

// maxVersionsPerGroup bounds one instance's versions; ice, the most
// talkative driver, reports about fifteen.
const maxVersionsPerGroup = 256

// Info is `devlink dev info` of one devlink instance: its driver and the
// versions of its components (Documentation/networking/devlink/devlink-info.rst).
// Fixed versions belong to the hardware (fw.psid, board.id), running ones
// are what runs now, stored ones what was flashed and runs after the next
// reset or activation.
type Info struct {
	Bus, Device string
	Driver      string
	Serial      string
	// Fixed, Running and Stored map a component name ("fw", "fw.version",
	// "fw.psid", "fw.mgmt") to its version; nil where the driver reports
	// no version of that kind.
	Fixed, Running, Stored map[string]string
}

// Handle is the instance as devlink prints it: "pci/0000:18:00.0".
func (i Info) Handle() string { return i.Bus + "/" + i.Device }

// Info dumps `devlink dev info` of every devlink instance. A driver whose
// info_get fails ends the kernel's dump for all (mlx5 before Linux commit
// 10dc35f6a443 when its pending-image query failed: "kernel answers: No
// data available"); then each instance is asked alone, and the answer holds
// those that answered with an error naming the others.
func (c *Client) Info() ([]Info, error) {
	msgs, err := c.family.Execute(cmdInfoGet, familyVersion, netlink.Dump, nil)
	switch {
	case err == nil:
		return decodeInfoDump(msgs)
	case notSupported(err):
		return nil, fmt.Errorf("%w (%w)", ErrNotSupported, err)
	}
	dumpErr := err
	msgs, err = c.family.Execute(cmdGet, familyVersion, netlink.Dump, nil)
	if err != nil {
		return nil, fmt.Errorf("devlinknl: INFO_GET dump: %w", dumpErr)
	}
	var out []Info
	var errs []error
	for _, m := range msgs {
		bus, dev, err := decodeHandle(m.Data)
		if err != nil {
			return nil, err
		}
		req, err := encodeHandle(bus, dev)
		if err != nil {
			return nil, err
		}
		replies, err := c.family.Execute(cmdInfoGet, familyVersion, 0, req)
		if err != nil {
			if !notSupported(err) { // a driver without info_get has none to give
				errs = append(errs, fmt.Errorf("devlinknl: INFO_GET %s/%s: %w", bus, dev, err))
			}
			continue
		}
		infos, err := decodeInfoDump(replies)
		if err != nil {
			return nil, err
		}
		out = append(out, infos...)
	}
	return out, errors.Join(errs...)
}

func notSupported(err error) bool {
	return errors.Is(err, ErrNotSupported) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, nlconn.ErrNoFamily)
}

func decodeInfoDump(msgs []genetlink.Message) ([]Info, error) {
	if len(msgs) > maxReportersPerDump {
		return nil, fmt.Errorf("devlinknl: %w: more than %d instances in one dump", errMalformed, maxReportersPerDump)
	}
	out := make([]Info, 0, len(msgs))
	for _, m := range msgs {
		if m.Header.Command != cmdInfoGet {
			return nil, fmt.Errorf("%w: command %d, want INFO_GET (%d)", errMalformed, m.Header.Command, cmdInfoGet)
		}
		i, err := decodeInfo(m.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, nil
}

// decodeInfo decodes one INFO_GET reply as devlink_nl_info_fill builds it:
// the handle, the driver name, the serial number, then one nest per
// version ({NAME, VALUE}) under FIXED, RUNNING or STORED. Attributes it does
// not know (the board serial number, newer additions) are skipped.
func decodeInfo(b []byte) (Info, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	ad.ByteOrder = native
	var i Info
	var verr error
	for ad.Next() {
		var group *map[string]string
		switch ad.Type() {
		case attrBusName:
			i.Bus = ad.String()
		case attrDevName:
			i.Device = ad.String()
		case attrInfoDriverName:
			i.Driver = ad.String()
		case attrInfoSerialNumber:
			i.Serial = ad.String()
		case attrInfoVersionFixed:
			group = &i.Fixed
		case attrInfoVersionRunning:
			group = &i.Running
		case attrInfoVersionStored:
			group = &i.Stored
		}
		if group == nil {
			continue
		}
		var name, value string
		ad.Nested(func(nd *netlink.AttributeDecoder) error {
			for nd.Next() {
				switch nd.Type() {
				case attrInfoVersionName:
					name = nd.String()
				case attrInfoVersionValue:
					value = nd.String()
				}
			}
			return nil
		})
		if err := addVersion(group, name, value); err != nil && verr == nil {
			verr = err
		}
	}
	if err := ad.Err(); err != nil {
		return Info{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if verr != nil {
		return Info{}, verr
	}
	return i, checkInfo(i)
}

// addVersion adds one version to a group; a name given twice keeps the
// first (devlink_info_version_put does not stop a driver from repeating one).
func addVersion(group *map[string]string, name, value string) error {
	if err := checkName("version", name); err != nil {
		return err
	}
	if err := checkValue(name, value); err != nil {
		return err
	}
	if *group == nil {
		*group = map[string]string{}
	}
	if len(*group) >= maxVersionsPerGroup {
		return fmt.Errorf("%w: more than %d versions", errMalformed, maxVersionsPerGroup)
	}
	if _, dup := (*group)[name]; !dup {
		(*group)[name] = value
	}
	return nil
}

// checkValue refuses a version that would make a bad label; unlike a name
// it may hold spaces ("ICE OS Default Package", "7339763 Rev 0.").
func checkValue(name, v string) error { return checkText("version of "+name, v) }

func checkInfo(i Info) error {
	for what, s := range map[string]string{"bus": i.Bus, "device": i.Device} {
		if err := checkName(what, s); err != nil {
			return err
		}
	}
	if i.Driver != "" {
		return checkName("driver", i.Driver)
	}
	return nil
}

// decodeHandle reads the bus and device names of a DEVLINK_CMD_GET reply.
func decodeHandle(b []byte) (bus, dev string, err error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", errMalformed, err)
	}
	ad.ByteOrder = native
	for ad.Next() {
		switch ad.Type() {
		case attrBusName:
			bus = ad.String()
		case attrDevName:
			dev = ad.String()
		}
	}
	if err := ad.Err(); err != nil {
		return "", "", fmt.Errorf("%w: %v", errMalformed, err)
	}
	if err := checkName("bus", bus); err != nil {
		return "", "", err
	}
	return bus, dev, checkName("device", dev)
}

func encodeHandle(bus, dev string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = native
	ae.String(attrBusName, bus)
	ae.String(attrDevName, dev)
	return ae.Encode()
}

// ParseInfoRecorded reads `devlink dev info -j` (or -jp):
//
//	{"info":{"pci/0000:af:00.0":{"driver":"bnxt_en","serial_number":"...",
//	  "versions":{"fixed":{"board.id":"..."},"running":{"fw":"216.1.216.0","fw.roce":"216.1.16.0"},"stored":{...}}}}}
//
// or its text without -j (parseInfoText), told apart by content. Instances
// are returned in handle order.
func ParseInfoRecorded(r io.Reader) ([]Info, error) {
	data, err := safefile.ReadAll(r, maxRecorded)
	if err != nil {
		return nil, fmt.Errorf("devlink dev info capture: %w", err)
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return parseInfoText(string(data))
	}
	var doc struct {
		Info map[string]struct {
			Driver   string `json:"driver"`
			Serial   string `json:"serial_number"`
			Versions struct {
				Fixed   map[string]string `json:"fixed"`
				Running map[string]string `json:"running"`
				Stored  map[string]string `json:"stored"`
			} `json:"versions"`
		} `json:"info"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("devlink dev info JSON: %w", err)
	}
	if doc.Info == nil {
		return nil, fmt.Errorf("devlink dev info JSON: %w: no \"info\" object", errMalformed)
	}
	var out []Info
	for _, handle := range slices.Sorted(maps.Keys(doc.Info)) {
		bus, dev, port, err := splitHandle(handle)
		if err != nil {
			return nil, err
		}
		if port >= 0 {
			return nil, fmt.Errorf("devlink dev info JSON: %w: port handle %q", errMalformed, handle)
		}
		d := doc.Info[handle]
		i := Info{Bus: bus, Device: dev, Driver: d.Driver, Serial: d.Serial}
		for _, g := range []struct {
			dst *map[string]string
			src map[string]string
		}{{&i.Fixed, d.Versions.Fixed}, {&i.Running, d.Versions.Running}, {&i.Stored, d.Versions.Stored}} {
			for _, name := range slices.Sorted(maps.Keys(g.src)) {
				if err := addVersion(g.dst, name, g.src[name]); err != nil {
					return nil, fmt.Errorf("%s: %w", handle, err)
				}
			}
		}
		if err := checkInfo(i); err != nil {
			return nil, fmt.Errorf("%s: %w", handle, err)
		}
		out = append(out, i)
	}
	return out, nil
}

// parseInfoText reads `devlink dev info` as iproute2 prints it without -j
// (devlink.c pr_out_info, pr_out_versions_single): a handle line ending in
// ':', "key value" lines for the driver and serial numbers, then
// "versions:" with "fixed:", "running:" and "stored:" groups of
// "component version" lines. The value is the rest of the line (board.id
// "7339763 Rev 0."). Sections are told by their headers, not by indentation,
// which differs between iproute2 versions and documents. iproute2's error
// ("kernel answers: No data available") is an error.
func parseInfoText(text string) ([]Info, error) {
	var (
		out   []Info
		cur   *Info
		group *map[string]string
	)
	for n, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if _, ok := node.PromptCommand(t, "devlink"); ok || t == "" {
			continue
		}
		if msg, ok := strings.CutPrefix(t, "kernel answers:"); ok {
			return nil, fmt.Errorf("line %d: devlink dev info failed: %s", n+1, strings.TrimSpace(msg))
		}
		key, value, _ := strings.Cut(t, " ")
		value = strings.TrimSpace(value)
		switch {
		case value == "" && strings.HasSuffix(key, ":") && strings.Contains(key, "/"):
			bus, dev, port, err := splitHandle(strings.TrimSuffix(key, ":"))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			if port >= 0 {
				return nil, fmt.Errorf("line %d: %w: port handle %q", n+1, errMalformed, key)
			}
			out = append(out, Info{Bus: bus, Device: dev})
			cur, group = &out[len(out)-1], nil
			continue
		case cur == nil:
			return nil, fmt.Errorf("line %d: %w: %q before any devlink handle", n+1, errMalformed, clip(t))
		case value == "" && key == "versions:":
			group = nil
			continue
		case value == "" && (key == "fixed:" || key == "running:" || key == "stored:"):
			group = map[string]*map[string]string{"fixed:": &cur.Fixed, "running:": &cur.Running, "stored:": &cur.Stored}[key]
			continue
		case value == "":
			return nil, fmt.Errorf("line %d: %w: %q has no value", n+1, errMalformed, clip(t))
		case group != nil:
			if err := addVersion(group, key, value); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		case key == "driver":
			cur.Driver = value
		case key == "serial_number":
			cur.Serial = value
		}
		// Other instance attributes (board.serial_number, function.uid)
		// are not read.
	}
	for _, i := range out {
		if err := checkInfo(i); err != nil {
			return nil, fmt.Errorf("%s: %w", i.Handle(), err)
		}
	}
	slices.SortStableFunc(out, func(a, b Info) int { return strings.Compare(a.Handle(), b.Handle()) })
	return out, nil
}
