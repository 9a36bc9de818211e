package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
)

// ncclJSONFile is the -J output of nccl-tests (src/util.cu). Its writer is
// hand-rolled: root is the "%6i" string, booleans are the strings
// "true"/"false" (or "unchecked"), NaN doubles are the string "nan" and
// nwrong is null when validation is off, hence the flex types.
type ncclJSONFile struct {
	Version     flexInt  `json:"version"`
	Args        []string `json:"args"`
	NCCLVersion flexInt  `json:"nccl_version"`
	Config      struct {
		NThreads flexInt `json:"nthreads"`
		NGPUs    flexInt `json:"ngpus"`
		Devices  []struct {
			Rank     flexInt `json:"rank"`
			Hostname string  `json:"hostname"`
			Device   flexInt `json:"device"`
		} `json:"devices"`
	} `json:"config"`
	Results []struct {
		Size           flexInt          `json:"size"`
		Count          flexInt          `json:"count"`
		Type           string           `json:"type"`
		RedOp          string           `json:"redop"`
		Root           flexInt          `json:"root"`
		OutOfPlace     *ncclJSONMeasure `json:"out_of_place"`
		InPlace        *ncclJSONMeasure `json:"in_place"`
		ExperimentName string           `json:"experiment_name"`
	} `json:"results"`
	OutOfBounds *struct {
		Count flexInt  `json:"count"`
		Okay  flexBool `json:"okay"`
	} `json:"out_of_bounds"`
	AverageBusBandwidth *struct {
		Bandwidth flexFloat `json:"bandwidth"`
		Okay      flexBool  `json:"okay"`
	} `json:"average_bus_bandwidth"`
	Errors []string `json:"errors"`
}

type ncclJSONMeasure struct {
	Time    *flexFloat `json:"time"`
	CPUTime *flexFloat `json:"cpu_time"` // -C writes this instead of time
	AlgBW   flexFloat  `json:"alg_bw"`
	BusBW   flexFloat  `json:"bus_bw"`
	NWrong  *flexFloat `json:"nwrong"`
}

// NCCLJSON parses an nccl-tests -J file (format version 2 and 3). The
// file is written by MPI rank 0 only, so duplicated non-MPI runs cannot be
// seen here; use NCCL on stdout for that.
func NCCLJSON(data []byte) (*NCCLResult, error) {
	res := &NCCLResult{Reason: ReasonParseError}
	if len(data) > MaxOutputBytes {
		return res, fmt.Errorf("nccl-tests JSON larger than %d bytes", MaxOutputBytes)
	}
	var f ncclJSONFile
	if err := json.Unmarshal(data, &f); err != nil {
		return res, fmt.Errorf("could not parse nccl-tests JSON: %w", err)
	}
	res.NCCLVersion = ncclVersionString(int(f.NCCLVersion))
	if len(f.Args) > 0 {
		res.Collective = path.Base(f.Args[0])
	}
	perProcess := max(1, int(f.Config.NThreads)) * max(1, int(f.Config.NGPUs))
	// util.cu records only the first device line of each process.
	res.NRanks = len(f.Config.Devices) * perProcess
	for _, d := range f.Config.Devices {
		res.Devices = append(res.Devices, NCCLDevice{Rank: int(d.Rank), Host: d.Hostname, Device: int(d.Device)})
	}

	var warnings, errs messageList
	for _, r := range f.Results {
		if res.Collective == "" && r.ExperimentName != "" {
			res.Collective = r.ExperimentName
		}
		if r.Size < 0 || r.Count < 0 {
			warnings.add(fmt.Sprintf("ignored JSON result with negative size %d", r.Size))
			continue
		}
		out, okOut := r.OutOfPlace.measurement()
		in, okIn := r.InPlace.measurement()
		if !okOut && !okIn {
			warnings.add(fmt.Sprintf("ignored JSON result for size %d without valid numbers", r.Size))
			continue
		}
		row := NCCLRow{
			SizeBytes: uint64(r.Size), Count: uint64(r.Count), Type: r.Type, RedOp: r.RedOp,
			Root: int(r.Root), OutOfPlace: out, InPlace: in,
		}
		if !row.plausible() {
			res.Impossible = true
			errs.add(fmt.Sprintf("impossible bus bandwidth (above any network or NVLink port) for size %d", r.Size))
			continue
		}
		res.Rows = append(res.Rows, row)
	}
	if f.OutOfBounds != nil {
		res.OutOfBoundsCount = int64(f.OutOfBounds.Count)
		res.OutOfBoundsFailed = res.OutOfBoundsCount > 0 || f.OutOfBounds.Okay == flexFalse
	}
	if f.AverageBusBandwidth != nil {
		// The file is written at the end of the run, the average last.
		res.Complete = true
		v := float64(f.AverageBusBandwidth.Bandwidth)
		switch bw := ncclGBToBytesPerSecond(v); {
		case !finite(v) || v < 0:
		case bw > maxNCCLBusBytesPerSecond:
			res.Impossible = true
			errs.add(fmt.Sprintf("impossible average bus bandwidth %g GB/s", v))
		default:
			res.AvgBusBandwidthBytesPerSecond, res.HasAverage = bw, true
		}
		res.AvgBusBandwidthFailed = f.AverageBusBandwidth.Okay == flexFalse
	}
	for _, e := range f.Errors {
		errs.add(e)
	}
	res.Warnings, res.Errors = warnings.list(), errs.list()
	seen := outputSeen{recognized: f.Version > 0 || len(f.Args) > 0 || f.Results != nil, unreadable: len(f.Results) > 0}
	res.Reason = classifyNCCL(res, res.Errors, seen)
	if len(res.Rows) == 0 {
		return res, fmt.Errorf("nccl-tests JSON (%s): %w", res.Reason, ErrNoResults)
	}
	return res, nil
}

// measurement converts one placement; a placement with a NaN or negative
// value is reported as absent rather than as a zero that looks measured.
func (m *ncclJSONMeasure) measurement() (NCCLMeasurement, bool) {
	absent := NCCLMeasurement{Wrong: -1, MaxError: -1}
	if m == nil {
		return absent, false
	}
	t := m.Time
	if t == nil {
		t = m.CPUTime
	}
	if t == nil || !allFiniteNonNegative(float64(*t), float64(m.AlgBW), float64(m.BusBW)) {
		return absent, false
	}
	out := newNCCLMeasurement(float64(*t), float64(m.AlgBW), float64(m.BusBW))
	if m.NWrong != nil && finite(float64(*m.NWrong)) && *m.NWrong >= 0 {
		out.Wrong = ncclWrongCount(float64(*m.NWrong))
	}
	return out, true
}

// flexFloat accepts a number, "nan"/"inf" strings and null (NaN).
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = flexFloat(math.NaN())
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*f = flexFloat(v)
	return nil
}

// flexInt accepts a number, a padded numeric string ("    -1") or null.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	var f flexFloat
	if err := f.UnmarshalJSON(b); err != nil {
		return err
	}
	v := float64(f)
	switch {
	case math.IsNaN(v):
		*n = 0
	case v >= math.MaxInt64 || v <= math.MinInt64:
		return fmt.Errorf("integer out of range: %s", b)
	default:
		*n = flexInt(v)
	}
	return nil
}

// flexBool distinguishes true, false and "unchecked" (the average bandwidth
// was not compared with NCCL_TESTS_MIN_BW).
type flexBool int

const (
	flexUnset flexBool = iota
	flexTrue
	flexFalse
	flexUnchecked
)

func (v *flexBool) UnmarshalJSON(b []byte) error {
	var s any
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch x := s.(type) {
	case bool:
		*v = map[bool]flexBool{true: flexTrue, false: flexFalse}[x]
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			*v = flexTrue
		case "false":
			*v = flexFalse
		default:
			*v = flexUnchecked
		}
	default:
		*v = flexUnset
	}
	return nil
}
