// Package devlinknl reads devlink health reporters (DEVLINK_CMD_HEALTH_REPORTER_GET
// over generic netlink) and the versions of `devlink dev info`
// (DEVLINK_CMD_INFO_GET), and decodes captures of `devlink health show` and
// `devlink dev info`, with -j or without.
//
// It only reads: it never sends SET, RECOVER, DIAGNOSE or DUMP commands.
// Recovering or dumping a reporter is an operator's decision (a dump of
// mlx5's fw_fatal reporter is a firmware crash dump that costs seconds).
package devlinknl

import (
	"errors"
	"fmt"
)

// The devlink generic netlink family (include/uapi/linux/devlink.h).
const (
	familyName    = "devlink"
	familyVersion = 1
)

// Commands and attributes of include/uapi/linux/devlink.h. The enums are
// ABI ("don't change the order or add anything between"); the numbers were
// counted off the header and are checked by the tests against iproute2's
// use of them.
const (
	cmdHealthReporterGet = 52 // DEVLINK_CMD_HEALTH_REPORTER_GET

	attrBusName   = 1 // DEVLINK_ATTR_BUS_NAME, string
	attrDevName   = 2 // DEVLINK_ATTR_DEV_NAME, string
	attrPortIndex = 3 // DEVLINK_ATTR_PORT_INDEX, u32 (port reporters, Linux 5.9+)

	attrHealthReporter             = 114 // nested
	attrHealthReporterName         = 115 // string
	attrHealthReporterState        = 116 // u8, enum devlink_health_reporter_state
	attrHealthReporterErrCount     = 117 // u64
	attrHealthReporterRecoverCount = 118 // u64
)

// State is enum devlink_health_reporter_state.
type State uint8

const (
	StateHealthy State = 0 // DEVLINK_HEALTH_REPORTER_STATE_HEALTHY
	StateError   State = 1 // DEVLINK_HEALTH_REPORTER_STATE_ERROR
)

// String spells the state as `devlink health show` does.
func (s State) String() string {
	switch s {
	case StateHealthy:
		return "healthy"
	case StateError:
		return "error"
	}
	return "unknown"
}

// Reporter is one health reporter of a devlink instance (or of one of its
// ports).
type Reporter struct {
	// Bus and Device name the devlink instance: "pci", "0000:18:00.0".
	Bus, Device string
	// Port is the devlink port index of a port reporter (mlx5's tx and rx
	// reporters since Linux 5.9), -1 for a device reporter.
	Port int64
	Name string
	// State is what the driver last reported; Errors counts the errors it
	// reported, Recoveries the recoveries that succeeded.
	State      State
	Errors     uint64
	Recoveries uint64
}

// Handle is the reporter's owner as devlink prints it: "pci/0000:18:00.0",
// or "pci/0000:18:00.0/65535" for a port reporter.
func (r Reporter) Handle() string {
	h := r.Bus + "/" + r.Device
	if r.Port >= 0 {
		h += fmt.Sprintf("/%d", r.Port)
	}
	return h
}

var (
	// ErrNotSupported means the kernel has no devlink family (built without
	// CONFIG_NET_DEVLINK, or older than 4.6) or not the command asked (health
	// reporters before 5.1, dev info before 5.1): nothing to read, not a
	// failure.
	ErrNotSupported = errors.New("devlinknl: not supported by this kernel's devlink")
	// errMalformed wraps every decoding error.
	errMalformed = errors.New("malformed devlink message")
)
