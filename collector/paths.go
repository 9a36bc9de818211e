package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/reader"
)

// DefaultScenarioDir is where the bundled sample nodes are, relative to the
// repository checkout (collector/testdata/<scenario>/{sys,dev,replay,proc}).
const DefaultScenarioDir = "collector/testdata"

// UsageError is a flag whose value cannot work: a path that does not exist,
// a scenario that is not there. The commands exit 2 on it, naming the flag.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// scenarioPaths are the reader paths of a bundled scenario: its sys and dev
// trees, and its replay captures and proc copy where it has them.
func scenarioPaths(dir, name string) (sys, dev, replay, proc, rootfs string, err error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", "", "", "", "", usageErrorf("--scenario=%s: a scenario is a directory name under --scenario.dir, such as mlx5-8x400g-healthy", name)
	}
	if st, statErr := os.Stat(dir); statErr != nil || !st.IsDir() {
		return "", "", "", "", "", usageErrorf("--scenario=%s: there is no scenario directory %s here: run from the roce_exporter checkout, or point --scenario.dir at its collector/testdata", name, dir)
	}
	root := filepath.Join(dir, name)
	if !isDir(filepath.Join(root, "sys")) {
		return "", "", "", "", "", usageErrorf("--scenario=%s: no such scenario in %s; the scenarios are: %s (README, \"Sample nodes\")", name, dir, strings.Join(ScenarioNames(dir), ", "))
	}
	sys, dev = filepath.Join(root, "sys"), filepath.Join(root, "dev")
	if isDir(filepath.Join(root, "replay")) {
		replay = filepath.Join(root, "replay")
	}
	if isDir(filepath.Join(root, "proc")) {
		proc = filepath.Join(root, "proc")
	}
	if isDir(filepath.Join(root, "rootfs")) {
		rootfs = filepath.Join(root, "rootfs")
	}
	return sys, dev, replay, proc, rootfs, nil
}

// ScenarioNames lists the scenarios under dir: its subdirectories with a
// sys tree, sorted.
func ScenarioNames(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if isDir(filepath.Join(dir, e.Name(), "sys")) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// checkPaths refuses reader paths that do not exist, so that a misspelled
// --path.sysfs is a usage error instead of a node with nothing on it.
func checkPaths(o reader.Options) error {
	if err := checkDir("--path.sysfs", o.SysPath); err != nil {
		return err
	}
	if !isSysfsTree(o.SysPath) {
		msg := fmt.Sprintf("--path.sysfs=%s is not a sysfs tree: it has no class/, bus/ or devices/ directory", o.SysPath)
		if isSysfsTree(filepath.Join(o.SysPath, "sys")) {
			msg += fmt.Sprintf("; did you mean --path.sysfs=%s?", filepath.Join(o.SysPath, "sys"))
		}
		return usageErrorf("%s", msg)
	}
	for _, p := range []struct{ flag, path string }{
		{"--path.dev", o.DevPath},
		{"--path.proc", o.ProcPath},
		{"--path.rootfs", o.RootFS},
		{"--collector.ethtool.replay-dir", o.ReplayDir},
	} {
		if p.path == "" {
			continue
		}
		if err := checkDir(p.flag, p.path); err != nil {
			return err
		}
	}
	return nil
}

func checkDir(flag, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("%s=%s: no such directory", flag, path)
	case err != nil:
		return usageErrorf("%s=%s: %v", flag, path, errors.Unwrap(err))
	case !st.IsDir():
		return usageErrorf("%s=%s: not a directory", flag, path)
	}
	return nil
}

// isSysfsTree reports a directory laid out as sysfs is: a live sysfs, or a
// copy of one with at least one of its top-level directories.
func isSysfsTree(path string) bool {
	for _, sub := range []string{"class", "bus", "devices"} {
		if isDir(filepath.Join(path, sub)) {
			return true
		}
	}
	return false
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// sampleName names the node whose data o reads when it is not this machine:
// the scenario, else the directory a copied sysfs tree (or, on this
// machine's sysfs, the replayed captures) came from; "" for this machine.
func sampleName(scenario string, o reader.Options) string {
	if scenario != "" {
		return scenario
	}
	from := ""
	switch {
	case !reader.IsLiveSysfs(o.SysPath):
		from = o.SysPath
	case o.ReplayDir != "":
		from = o.ReplayDir
	default:
		return ""
	}
	abs, err := filepath.Abs(from)
	if err != nil {
		abs = from
	}
	// collector/testdata/<name>/sys and …/<name>/replay name the node by
	// their parent.
	if base := filepath.Base(abs); base == "sys" || base == "replay" {
		abs = filepath.Dir(abs)
	}
	return filepath.Base(abs)
}
