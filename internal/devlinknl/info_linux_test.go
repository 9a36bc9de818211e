//go:build linux

package devlinknl

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// The numbers counted off devlink.h agree with golang.org/x/sys's.
func TestInfoConstants(t *testing.T) {
	for name, pair := range map[string][2]int{
		"CMD_GET":                {cmdGet, unix.DEVLINK_CMD_GET},
		"CMD_INFO_GET":           {cmdInfoGet, unix.DEVLINK_CMD_INFO_GET},
		"CMD_HEALTH_REPORTER":    {cmdHealthReporterGet, unix.DEVLINK_CMD_HEALTH_REPORTER_GET},
		"ATTR_INFO_DRIVER_NAME":  {attrInfoDriverName, unix.DEVLINK_ATTR_INFO_DRIVER_NAME},
		"ATTR_INFO_SERIAL":       {attrInfoSerialNumber, unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER},
		"ATTR_INFO_FIXED":        {attrInfoVersionFixed, unix.DEVLINK_ATTR_INFO_VERSION_FIXED},
		"ATTR_INFO_RUNNING":      {attrInfoVersionRunning, unix.DEVLINK_ATTR_INFO_VERSION_RUNNING},
		"ATTR_INFO_STORED":       {attrInfoVersionStored, unix.DEVLINK_ATTR_INFO_VERSION_STORED},
		"ATTR_INFO_VERSION_NAME": {attrInfoVersionName, unix.DEVLINK_ATTR_INFO_VERSION_NAME},
		"ATTR_INFO_VERSION_VAL":  {attrInfoVersionValue, unix.DEVLINK_ATTR_INFO_VERSION_VALUE},
		"ATTR_HEALTH_REPORTER":   {attrHealthReporter, unix.DEVLINK_ATTR_HEALTH_REPORTER},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s = %d, devlink.h says %d", name, pair[0], pair[1])
		}
	}
}

// TestLiveInfo asks this machine's kernel; without a devlink family the
// answer is ErrNotSupported, with one the dump must decode.
func TestLiveInfo(t *testing.T) {
	c := New(Config{})
	defer c.Close()
	infos, err := c.Info()
	if errors.Is(err, ErrNotSupported) {
		t.Logf("no devlink here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		t.Logf("%s %s running %v stored %v", i.Handle(), i.Driver, i.Running, i.Stored)
	}
}
