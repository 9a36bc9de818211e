package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/probes"
)

// switchSuspectQuery is what the node page and `probe judge` ask the fleet's
// Prometheus: the switches its rules name (alerts/alerts.yml).
const switchSuspectQuery = `ALERTS{alertname="RoCEProbeSuspectSwitch",alertstate="firing"}`

// maxQueryBytes bounds a Prometheus answer: a firing alert per switch of a
// large fabric is a few hundred kilobytes at most.
const maxQueryBytes = 8 << 20

// switchSuspects asks the Prometheus at base (its URL, as for the web UI)
// which switches RoCEProbeSuspectSwitch fires for, by chassis_id.
func switchSuspects(ctx context.Context, base string) (map[string]bool, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/api/v1/query")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not an http(s) URL of a Prometheus", base)
	}
	u.RawQuery = url.Values{"query": {switchSuspectQuery}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := safefile.ReadAll(resp.Body, maxQueryBytes)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("%s answered %s, not a Prometheus query result: %v", base, resp.Status, err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%s answered %s: %s %s", base, resp.Status, answer.Status, answer.Error)
	}
	out := map[string]bool{}
	for _, r := range answer.Data.Result {
		if id := r.Metric["chassis_id"]; id != "" {
			out[id] = true
		}
	}
	return out, nil
}

// fleetView is the switch view of a node: its rails' switches, and the
// fleet's switch suspects when a Prometheus URL is given (asked at most every
// cacheFor, so that a page reload does not query Prometheus each time).
type fleetView struct {
	prometheus string
	rails      func() map[string]probes.RailSwitch
	cacheFor   time.Duration

	mu       sync.Mutex
	asked    time.Time
	suspects map[string]bool
	err      error
}

func (f *fleetView) view(ctx context.Context) probes.SwitchView {
	v := probes.SwitchView{Rails: f.rails()}
	if f.prometheus == "" {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked.IsZero() || time.Since(f.asked) > f.cacheFor {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		f.suspects, f.err = switchSuspects(ctx, f.prometheus)
		cancel()
		f.asked = time.Now()
	}
	if f.err != nil {
		v.AskErr = f.err.Error()
		return v
	}
	v.Asked, v.Suspects = true, f.suspects
	return v
}
