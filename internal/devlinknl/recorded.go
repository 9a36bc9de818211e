package devlinknl

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ParseRecorded reads the output of `devlink health show -j` (or `-jp`):
//
//	{"health":{"pci/0000:08:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0,...}],
//	           "pci/0000:08:00.0/65535":[{"reporter":"tx",...}]}}
//
// A handle with a third part is a port reporter. iproute2 before 5.4
// printed the reporter under "name" instead of "reporter"; both are read.
// Reporters are returned in handle order, then in the order devlink
// printed them.
func ParseRecorded(r io.Reader) ([]Reporter, error) {
	dec := json.NewDecoder(r)
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
			switch st, _ := obj["state"].(string); st {
			case "healthy":
				r.State = StateHealthy
			case "error":
				r.State = StateError
			default:
				return nil, fmt.Errorf("%s %s: %w: state %q", handle, name, errMalformed, st)
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
