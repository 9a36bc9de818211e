package devlinknl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

// maxRecorded bounds a capture; a real one of a node is a few kilobytes.
const maxRecorded = 4 << 20

// ParseRecorded reads the output of `devlink health show -j` (or `-jp`):
//
//	{"health":{"pci/0000:08:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0,...}],
//	           "pci/0000:08:00.0/65535":[{"reporter":"tx",...}]}}
//
// or of `devlink health show` without -j (see parseHealthText), told apart
// by content. A handle with a third part is a port reporter. iproute2
// before 5.4 printed the reporter under "name" instead of "reporter"; both
// are read. Reporters are returned in handle order, then in the order
// devlink printed them.
func ParseRecorded(r io.Reader) ([]Reporter, error) {
	data, err := safefile.ReadAll(r, maxRecorded)
	if err != nil {
		return nil, fmt.Errorf("devlink health capture: %w", err)
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return parseHealthText(string(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc struct {
		Health map[string][]map[string]any `json:"health"`
	}
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("devlink health JSON: %w", err)
	}
	if doc.Health == nil {
		return nil, fmt.Errorf("devlink health JSON: %w: no \"health\" object", errMalformed)
	}
	var out []Reporter
	for _, handle := range slices.Sorted(maps.Keys(doc.Health)) {
		bus, dev, port, err := splitHandle(handle)
		if err != nil {
			return nil, err
		}
		for i, obj := range doc.Health[handle] {
			r := Reporter{Bus: bus, Device: dev, Port: port}
			name, _ := obj["reporter"].(string)
			if name == "" {
				name, _ = obj["name"].(string)
			}
			r.Name = name
			if err := checkName("reporter", name); err != nil {
				return nil, fmt.Errorf("%s reporter %d: %w", handle, i, err)
			}
			st, _ := obj["state"].(string)
			if r.State, err = parseState(st); err != nil {
				return nil, fmt.Errorf("%s %s: %w", handle, name, err)
			}
			if r.Errors, err = count(obj, "error"); err != nil {
				return nil, fmt.Errorf("%s %s: %w", handle, name, err)
			}
			if r.Recoveries, err = count(obj, "recover"); err != nil {
				return nil, fmt.Errorf("%s %s: %w", handle, name, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func parseState(s string) (State, error) {
	switch s {
	case "healthy":
		return StateHealthy, nil
	case "error":
		return StateError, nil
	}
	return 0, fmt.Errorf("%w: state %q", errMalformed, s)
}

// parseHealthText reads `devlink health show` as iproute2 prints it
// without -j (devlink.c pr_out_health): a handle line ending in ':', then
// per reporter its name and "key value" pairs, which iproute2 breaks over
// lines by version:
//
//	pci/0000:08:00.0:
//	  reporter fw
//	    state healthy error 0 recover 0 auto_dump true
//	auxiliary/mlx5_core.eth.1/131071:
//	  reporter tx
//	    state healthy error 0 recover 0 last_dump_date 2021-01-19 last_dump_time 05:42:26 grace_period 500 auto_recover true auto_dump true
//
// Before iproute2 5.4 the reporter line read "name tx". The command line of a
// pasted session is skipped; any other line is an error.
func parseHealthText(text string) ([]Reporter, error) {
	var (
		out    []Reporter
		handle string
		bus    string
		dev    string
		port   int64
		cur    *textReporter
		seen   = map[[2]string]bool{}
	)
	var reps []*textReporter
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if _, ok := node.PromptCommand(t, "devlink"); ok || t == "" {
			continue
		}
		f := strings.Fields(t)
		if len(f) == 1 && strings.HasSuffix(t, ":") && strings.Contains(t, "/") {
			var err error
			handle = strings.TrimSuffix(t, ":")
			if bus, dev, port, err = splitHandle(handle); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur = nil
			continue
		}
		if handle == "" {
			return nil, fmt.Errorf("line %d: %w: %q before any devlink handle", n, errMalformed, clip(t))
		}
		if f[0] == "reporter" || f[0] == "name" {
			cur = &textReporter{line: n, r: Reporter{Bus: bus, Device: dev, Port: port}}
			reps = append(reps, cur)
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: %w: %q outside a reporter", n, errMalformed, clip(t))
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: %w: %q is not KEY VALUE pairs", n, errMalformed, clip(t))
		}
		for k := 0; k < len(f); k += 2 {
			if err := cur.set(f[k], f[k+1]); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	for _, tr := range reps {
		if err := tr.complete(); err != nil {
			return nil, fmt.Errorf("line %d: %w", tr.line, err)
		}
		key := [2]string{tr.r.Handle(), tr.r.Name}
		if seen[key] {
			return nil, fmt.Errorf("line %d: %w: reporter %s of %s twice", tr.line, errMalformed, tr.r.Name, tr.r.Handle())
		}
		seen[key] = true
		out = append(out, tr.r)
	}
	slices.SortStableFunc(out, func(a, b Reporter) int { return strings.Compare(a.Handle(), b.Handle()) })
	return out, nil
}

// textReporter is a reporter being read from text, with the fields seen.
type textReporter struct {
	line                     int
	r                        Reporter
	name, state, errs, recov bool
}

func (tr *textReporter) set(k, v string) error {
	var err error
	switch k {
	case "reporter", "name":
		if tr.name {
			return fmt.Errorf("%w: second reporter name %q", errMalformed, v)
		}
		tr.r.Name, tr.name = v, true
		err = checkName("reporter", v)
	case "state":
		tr.r.State, err = parseState(v)
		tr.state = true
	case "error":
		tr.r.Errors, err = strconv.ParseUint(v, 10, 64)
		tr.errs = true
	case "recover":
		tr.r.Recoveries, err = strconv.ParseUint(v, 10, 64)
		tr.recov = true
	}
	// Other keys (grace_period, auto_recover, auto_dump, last_dump_date,
	// last_dump_time) are settings and times, not read.
	if err != nil {
		return fmt.Errorf("%w: %s %q: %v", errMalformed, k, v, err)
	}
	return nil
}

func (tr *textReporter) complete() error {
	if !tr.state || !tr.errs || !tr.recov {
		return fmt.Errorf("%w: reporter %q lacks its state, error or recover count", errMalformed, tr.r.Name)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// splitHandle splits "pci/0000:08:00.0[/65535]".
func splitHandle(h string) (bus, dev string, port int64, err error) {
	parts := strings.Split(h, "/")
	port = -1
	switch len(parts) {
	case 3:
		p, perr := strconv.ParseUint(parts[2], 10, 32)
		if perr != nil {
			return "", "", 0, fmt.Errorf("devlink handle %q: %w: port %q", h, errMalformed, parts[2])
		}
		port = int64(p)
		fallthrough
	case 2:
		bus, dev = parts[0], parts[1]
	default:
		return "", "", 0, fmt.Errorf("devlink handle %q: %w: want BUS/DEVICE[/PORT]", h, errMalformed)
	}
	if err := checkName("bus", bus); err != nil {
		return "", "", 0, err
	}
	if err := checkName("device", dev); err != nil {
		return "", "", 0, err
	}
	return bus, dev, port, nil
}

// count reads a non-negative integer field printed by pr_out_u64.
func count(obj map[string]any, key string) (uint64, error) {
	v, ok := obj[key]
	if !ok {
		return 0, fmt.Errorf("%w: no %q", errMalformed, key)
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%w: %q is %T, not a number", errMalformed, key, v)
	}
	u, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q = %s", errMalformed, key, n)
	}
	return u, nil
}
