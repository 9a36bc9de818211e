package archtest

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// exporter is the command whose link graph decides what internal/ may hold.
const exporter = "cmd/roce_exporter"

// testSupport are the packages under internal/ that the exporter does not
// link. They import nothing of the module above node, and only _test.go
// files, tools/ and this package's tests use them: moving them to tools/
// would have the exporter's own tests import tools/, the wrong way round.
var testSupport = []string{
	"internal/archtest",   // these tests
	"internal/sysfixture", // generated sysfs trees and captures for tests, tools/genfixtures, tools/benchtool
	"internal/testenv",    // helpers of _test.go files (imports "testing")
}

// belowInternal is what of the module outside internal/ a package under
// internal/ may import: node is the model the codecs fill, and imports
// nothing of the module itself, so nothing above internal/ comes with it.
var belowInternal = []string{"node"}

// moduleDeps maps each package of the module, relative to the module, to its
// transitive module dependencies (test files excluded), also relative.
func moduleDeps(pkgs []pkg) map[string][]string {
	deps := map[string][]string{}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		deps[name] = []string{}
		for _, d := range p.Deps {
			if rel, ok := strings.CutPrefix(d, module+"/"); ok {
				deps[name] = append(deps[name], rel)
			}
		}
	}
	return deps
}

func under(name, dir string) bool { return strings.HasPrefix(name, dir+"/") }

// internalViolations lists the packages under internal/ that depend on a
// package of the module outside internal/ (other than belowInternal).
func internalViolations(deps map[string][]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		if !under(name, "internal") {
			continue
		}
		for _, d := range deps[name] {
			if !under(d, "internal") && !slices.Contains(belowInternal, d) {
				out = append(out, name+" depends on "+d+", which is outside internal/")
			}
		}
	}
	return out
}

// toolsViolations lists the packages the exporter links that depend on
// tools/: tools sit above the exporter, never inside it.
func toolsViolations(deps map[string][]string) []string {
	linked, ok := deps[exporter]
	if !ok {
		return []string{exporter + " not found"}
	}
	var out []string
	for _, name := range append([]string{exporter}, linked...) {
		for _, d := range deps[name] {
			if under(d, "tools") {
				out = append(out, name+" (linked by "+exporter+") depends on "+d)
			}
		}
	}
	return out
}

// contentViolations lists what under internal/ is neither linked by the
// exporter nor test support, and test support the exporter links.
func contentViolations(deps map[string][]string) []string {
	linked := deps[exporter]
	var out []string
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		if !under(name, "internal") {
			continue
		}
		isLinked, isSupport := slices.Contains(linked, name), slices.Contains(testSupport, name)
		switch {
		case isLinked && isSupport:
			out = append(out, name+" is test support but "+exporter+" links it")
		case !isLinked && !isSupport:
			out = append(out, name+" is not linked by "+exporter+": a tool or benchmark goes under tools/")
		}
	}
	return out
}

// TestLayers: internal/ imports nothing above it, the exporter imports no
// tool, and internal/ holds only what the exporter links (and test support).
func TestLayers(t *testing.T) {
	deps := moduleDeps(list(t))
	for name, rule := range map[string]func(map[string][]string) []string{
		"InternalImportsNothingAboveIt":         internalViolations,
		"ExporterImportsNoTool":                 toolsViolations,
		"InternalHoldsOnlyWhatTheExporterLinks": contentViolations,
	} {
		t.Run(name, func(t *testing.T) {
			for _, v := range rule(deps) {
				t.Error(v)
			}
		})
	}
}

// The three rules on a made-up module: silent on the layout they allow,
// and each one names the package that breaks it.
func TestLayerRulesCatchViolations(t *testing.T) {
	healthy := map[string][]string{
		exporter:              {"collector", "reader", "probes", "config", "node", "internal/dcbnl", "internal/safefile"},
		"collector":           {"reader", "node", "internal/dcbnl"},
		"reader":              {"node", "internal/dcbnl"},
		"probes":              {"config", "node", "internal/safefile"},
		"config":              {"node", "internal/safefile"},
		"node":                {},
		"internal/dcbnl":      {"node"},
		"internal/safefile":   {},
		"internal/archtest":   {},
		"internal/testenv":    {},
		"internal/sysfixture": {"node"},
		"tools/fleetsim":      {"probes", "config", "node", "internal/safefile"},
		"tools/benchtool":     {"internal/sysfixture", "node"},
	}
	for name, rule := range map[string]func(map[string][]string) []string{
		"internal": internalViolations, "tools": toolsViolations, "content": contentViolations,
	} {
		if v := rule(healthy); len(v) > 0 {
			t.Errorf("%s rule fires on the allowed layout: %v", name, v)
		}
	}

	clone := func(change func(map[string][]string)) map[string][]string {
		m := map[string][]string{}
		for k, v := range healthy {
			m[k] = slices.Clone(v)
		}
		change(m)
		return m
	}
	for _, c := range []struct {
		name string
		rule func(map[string][]string) []string
		deps map[string][]string
		want string
	}{
		{"a tool back under internal/", internalViolations,
			clone(func(m map[string][]string) { m["internal/fleetsim"] = []string{"probes", "config", "node"} }),
			"internal/fleetsim depends on probes"},
		{"a codec that reaches up into the reader", internalViolations,
			clone(func(m map[string][]string) { m["internal/dcbnl"] = []string{"reader", "node"} }),
			"internal/dcbnl depends on reader"},
		{"the collector importing a tool", toolsViolations,
			clone(func(m map[string][]string) {
				m["collector"] = append(m["collector"], "tools/loadtest")
				m[exporter] = append(m[exporter], "tools/loadtest")
			}),
			"collector (linked by cmd/roce_exporter) depends on tools/loadtest"},
		{"the command importing a tool", toolsViolations,
			clone(func(m map[string][]string) { m[exporter] = append(m[exporter], "tools/idleflood") }),
			"cmd/roce_exporter (linked by cmd/roce_exporter) depends on tools/idleflood"},
		{"a tool left under internal/", contentViolations,
			clone(func(m map[string][]string) { m["internal/benchtool"] = []string{"internal/sysfixture"} }),
			"internal/benchtool is not linked by cmd/roce_exporter"},
		{"test support linked into the exporter", contentViolations,
			clone(func(m map[string][]string) { m[exporter] = append(m[exporter], "internal/testenv") }),
			"internal/testenv is test support but cmd/roce_exporter links it"},
	} {
		got := c.rule(c.deps)
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, c.want) }) {
			t.Errorf("%s: want a violation starting %q, got %v", c.name, c.want, got)
		}
	}
}
