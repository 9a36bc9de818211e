package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(got) != "new" || st.Mode().Perm() != 0o640 {
		t.Errorf("%q %v", got, st.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// A directory that cannot take the temporary file: the old file stays.
	if err := WriteAtomic(filepath.Join(dir, "missing", "x"), []byte("new"), 0o600); err == nil {
		t.Error("no error writing into a missing directory")
	}
}
