//go:build !linux

package probes

import "syscall"

// childAttr puts a child in its own process group. Only Linux has a
// parent-death signal; the probes run on Linux nodes, and this file keeps
// the package building elsewhere for its pure parts.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
