package collector

import "github.com/roce-exporter/roce_exporter/probes"

// probeStateWritable is part of the probe collector: whether the probe
// baselines persist. A state directory that cannot be written no longer
// stops the exporter (it took /metrics down on every node of a plan with
// probes and no state volume); the probes run and this says what is lost.
var probeStateWritable = newGaugeDesc(namespace+"_probe_state_dir_writable",
	"1 while the probe state directory (probes.state_dir, --probes.state-dir) can be written, 0 when it could not be created or written, or the last save failed: the probes still run, but their bandwidth baselines are kept in memory only and lost at every restart, so regressions are judged from scratch after each one (the log and the node page name the directory and the error). Absent with probes off.")

func updateProbeState(store *probes.Store, out *Sink) {
	dir, err := store.StateDir()
	if dir == "" {
		return
	}
	out.emit(probeStateWritable, boolFloat(err == nil))
}
