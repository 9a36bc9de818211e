package fleetsim

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Record is one finished trial as make sim keeps it (-record): the table
// can be rebuilt from records without running the trials again, a run that
// is stopped keeps its trials, and runs on several machines (other seeds)
// merge. Setup names what the trial ran under, so that trials of other
// rules, another plan or another simulator are never merged.
type Record struct {
	Setup    string        `json:"setup"`
	Class    string        `json:"class"`
	Nodes    int           `json:"nodes"`
	Rails    int           `json:"rails"`
	Deadline time.Duration `json:"deadline"`
	Outcome  Outcome       `json:"outcome"`
}

// Setup is the digest of what decides a trial's outcome besides its class,
// size and seed: the evaluated rules (the others may change), the
// configuration, and the code (the simulator's executable: Go builds are
// reproducible, so the same source, toolchain and flags give the same
// digest; make sim builds with -trimpath, so any checkout does).
func Setup(rs *RuleSet, cfg Config, executable string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "rules %s\ninterval %v\n", rs.Digest, rs.Interval)
	// The size is the record's own; TSDB and Exact give the same outcomes
	// (memstore_test.go), only slower.
	cfg.Nodes, cfg.TSDB, cfg.Exact = 0, false, false
	fmt.Fprintf(h, "config %+v\n", cfg)
	if executable != "" {
		f, err := os.Open(executable)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// RecordFile appends records to a file of JSON lines, one per trial, each
// written whole as soon as its trial ends.
type RecordFile struct {
	f *os.File
}

// OpenRecords opens (or creates) path for appending.
func OpenRecords(path string) (*RecordFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &RecordFile{f: f}, nil
}

// Add writes one record.
func (w *RecordFile) Add(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

// Close closes the file.
func (w *RecordFile) Close() error { return w.f.Close() }

// ReadRecords reads the records of every file. A line that is not a whole
// record (a run killed in the middle of a write) is skipped and counted.
func ReadRecords(paths ...string) (recs []Record, torn int, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Setup == "" || r.Class == "" || r.Nodes == 0 {
				torn++
				continue
			}
			recs = append(recs, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", p, err)
		}
	}
	return recs, torn, nil
}

// Rows builds the table's rows from the records of one setup: per size (in
// increasing order) and class (in Classes' order), one outcome per seed
// (a seed recorded twice counts once). Records of a class this simulator
// does not know are an error: their setup would differ.
func Rows(recs []Record, setup string) ([]Row, error) {
	type key struct {
		nodes int
		class string
	}
	rows := map[key]*Row{}
	seen := map[key]map[uint64]bool{}
	for _, r := range recs {
		if r.Setup != setup {
			continue
		}
		c, ok := ClassNamed(r.Class)
		if !ok {
			return nil, fmt.Errorf("a record of setup %s has the unknown class %q", setup, r.Class)
		}
		k := key{r.Nodes, r.Class}
		if rows[k] == nil {
			rows[k] = &Row{Class: c, Nodes: r.Nodes, Rails: r.Rails, Deadline: r.Deadline}
			seen[k] = map[uint64]bool{}
		}
		if seen[k][r.Outcome.Seed] {
			continue
		}
		seen[k][r.Outcome.Seed] = true
		rows[k].Outcomes = append(rows[k].Outcomes, r.Outcome)
	}
	var sizes []int
	for k := range rows {
		if !slices.Contains(sizes, k.nodes) {
			sizes = append(sizes, k.nodes)
		}
	}
	slices.Sort(sizes)
	var out []Row
	for _, n := range sizes {
		for _, c := range Classes {
			if r := rows[key{n, c.Name}]; r != nil {
				slices.SortFunc(r.Outcomes, func(a, b Outcome) int { return int(a.Seed) - int(b.Seed) })
				out = append(out, *r)
			}
		}
	}
	return out, nil
}

// Setups counts the records of each setup.
func Setups(recs []Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		n[r.Setup]++
	}
	return n
}
