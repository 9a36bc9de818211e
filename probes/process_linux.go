package probes

import "syscall"

// childAttr puts a child in its own process group (so a timeout kills its
// whole tree) and gives it a parent-death signal: a child outlives a kill -9
// of the exporter otherwise (the context that would kill its group dies with
// us), and a perftest server left over holds its port and device. See
// startOnSpawnThread for why the forking thread must live as long as the
// process.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
