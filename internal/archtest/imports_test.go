package archtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/roce-exporter/roce_exporter"

type pkg struct {
	ImportPath string
	Deps       []string
}

// list returns the packages of the module with their transitive imports
// (test files excluded).
func list(t *testing.T, env ...string) []pkg {
	t.Helper()
	cmd := exec.Command(goTool(), "list", "-deps=false", "-json=ImportPath,Deps", "./...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// rule says what a package of the model side may depend on: only the
// standard library and the listed packages of the module (and what they
// import), nothing of Prometheus, HTTP serving or flags.
type rule struct {
	pkg     string
	allowed []string // module packages, relative to the module
}

var rules = []rule{
	{pkg: "node"},
	{pkg: "config", allowed: []string{"node", "internal/safefile"}},
	{pkg: "health", allowed: []string{"node", "config"}}, // config's own imports are allowed through it
	{pkg: "probes", allowed: []string{"node", "config", "internal/safefile", "probes/parse", "probes/schedule"}},
	{pkg: "probes/parse"},
	{pkg: "probes/schedule", allowed: []string{"config"}},
	{pkg: "reader", allowed: []string{"node", "internal/nicstats", "internal/dcbnl", "internal/ethnl", "internal/devlinknl", "internal/lldpcli", "internal/rtnl", "internal/nlconn", "internal/safefile"}},
	{pkg: "pipeline", allowed: []string{"node", "config", "health", "reader"}},
	{pkg: "i18n", allowed: []string{"health"}}, // and health's own imports
}

// forbidden are third-party trees the model side must not pull in.
var forbidden = []string{
	"github.com/prometheus/",
	"github.com/alecthomas/kingpin",
	"net/http",
}

func TestModelSideImports(t *testing.T) {
	byPath := map[string]pkg{}
	for _, p := range list(t) {
		byPath[p.ImportPath] = p
	}
	for _, r := range rules {
		p, ok := byPath[module+"/"+r.pkg]
		if !ok {
			t.Errorf("package %s not found", r.pkg)
			continue
		}
		allowed := map[string]bool{}
		for _, a := range r.allowed {
			allowed[module+"/"+a] = true
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"/") && !allowed[d] && !allowedTransitively(d, r, byPath) {
				t.Errorf("%s depends on %s; it may use only %v", r.pkg, strings.TrimPrefix(d, module+"/"), r.allowed)
			}
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", r.pkg, d)
				}
			}
		}
	}
}

// allowedTransitively accepts a module package reached through one of the
// allowed ones (config's own imports are config's business).
func allowedTransitively(dep string, r rule, byPath map[string]pkg) bool {
	for _, a := range r.allowed {
		for _, d := range byPath[module+"/"+a].Deps {
			if d == dep {
				return true
			}
		}
	}
	return false
}

// No package reaches back up: nothing imports the command, the collector
// is imported only by the command, the pipeline only by the collector and
// the command, and the reader only by those and the pipeline.
func TestNothingReachesBackUp(t *testing.T) {
	importers := map[string][]string{
		"cmd/roce_exporter": nil,
		"collector":         {"cmd/roce_exporter"},
		"reader":            {"pipeline", "collector", "cmd/roce_exporter"},
		"pipeline":          {"collector", "cmd/roce_exporter"},
	}
	for _, p := range list(t) {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		for _, d := range p.Deps {
			target := strings.TrimPrefix(d, module+"/")
			ok, ruled := importers[target]
			if !ruled || d == p.ImportPath {
				continue
			}
			if !contains(ok, name) {
				t.Errorf("%s depends on %s, which only %v may use", name, target, ok)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The model side is pure Go with no Linux system calls: it must build for
// another OS.
func TestModelSideBuildsOnDarwin(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles four packages")
	}
	cmd := exec.Command(goTool(), "build", "./node/...", "./health/...", "./config/...", "./probes/...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=darwin go build: %v\n%s", err, out)
	}
}
