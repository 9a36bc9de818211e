// Command genfixtures regenerates the sysfs fixture trees under
// collector/testdata/<scenario>/ from internal/sysfixture.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

func main() {
	out := flag.String("out", "collector/testdata", "directory that holds one folder per scenario")
	flag.Parse()
	for _, name := range sysfixture.ScenarioNames() {
		dir := filepath.Join(*out, name)
		for _, sub := range []string{"sys", "dev", "replay", "proc", "rootfs"} {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				fail(err)
			}
		}
		tmp, err := os.MkdirTemp(*out, ".gen-")
		if err != nil {
			fail(err)
		}
		if err := sysfixture.WriteScenario(filepath.Join(tmp, "root"), name); err != nil {
			fail(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fail(err)
		}
		for _, sub := range []string{"sys", "dev", "replay", "proc", "rootfs"} {
			src := filepath.Join(tmp, "root", sub)
			if _, err := os.Stat(src); err == nil {
				if err := os.Rename(src, filepath.Join(dir, sub)); err != nil {
					fail(err)
				}
			}
		}
		os.RemoveAll(tmp)
		fmt.Println("wrote", dir)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genfixtures:", err)
	os.Exit(1)
}
