package sysfixture

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedFixturesMatchGenerator keeps collector/testdata honest: the
// trees are generated, never edited by hand (run `make fixtures`).
func TestCommittedFixturesMatchGenerator(t *testing.T) {
	for _, name := range ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			fresh := filepath.Join(t.TempDir(), "root")
			if err := WriteScenario(fresh, name); err != nil {
				t.Fatal(err)
			}
			committed := filepath.Join("..", "..", "collector", "testdata", name)
			want := snapshotTree(t, fresh)
			for _, dir := range emptyDirs(t, fresh) {
				t.Errorf("%s: the generator leaves it empty, and git cannot carry an empty directory", dir)
			}
			got := snapshotTree(t, committed)
			for p, w := range want {
				if g, ok := got[p]; !ok {
					t.Errorf("%s: missing from the committed fixture (run make fixtures)", p)
				} else if g != w {
					t.Errorf("%s: committed %q, generator %q", p, g, w)
				}
			}
			for p := range got {
				if _, ok := want[p]; !ok {
					t.Errorf("%s: not produced by the generator", p)
				}
			}
		})
	}
}

// snapshotTree maps every path under sys/, dev/ and replay/ to its content, link
// target or "dir".
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sub := range []string{"sys", "dev", "replay"} {
		base := filepath.Join(root, sub)
		if _, err := os.Lstat(base); err != nil {
			continue
		}
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				out[rel] = "-> " + target
			case d.IsDir():
				out[rel] = "dir"
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				out[rel] = string(b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func emptyDirs(t *testing.T, root string) []string {
	t.Helper()
	var empty []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		entries, err := os.ReadDir(p)
		if err == nil && len(entries) == 0 {
			rel, _ := filepath.Rel(root, p)
			empty = append(empty, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return empty
}
