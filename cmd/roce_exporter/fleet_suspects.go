package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
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

// railSwitchQuery is every node's rails with their LLDP switch, as the fleet's
// Prometheus holds them: the node and rail of the pair-probe judgement, the
// device's interface, the interface's neighbour.
const railSwitchQuery = `max by (node, rail, chassis_id) (
  (0 * roce_probe_peers_failed + 1)
  * on (job, instance, device) group_left (interface) max by (job, instance, device, interface) (roce_port_info)
  * on (job, instance, interface) group_left (chassis_id) max by (job, instance, interface, chassis_id) (roce_lldp_neighbor_info)
)`

// switchSuspects asks the Prometheus at base (its URL, as for the web UI)
// which switches RoCEProbeSuspectSwitch fires for, by chassis_id.
func switchSuspects(ctx context.Context, base string) (map[string]bool, error) {
	out := map[string]bool{}
	err := queryVector(ctx, base, switchSuspectQuery, func(m map[string]string) {
		if id := m["chassis_id"]; id != "" {
			out[id] = true
		}
	})
	return out, err
}

// railSwitchesOfFleet asks the Prometheus at base for the switch of every
// node's rail: {node, rail} → chassis_id.
func railSwitchesOfFleet(ctx context.Context, base string) (map[nodeRail]string, error) {
	out := map[nodeRail]string{}
	err := queryVector(ctx, base, railSwitchQuery, func(m map[string]string) {
		rail, err := strconv.Atoi(m["rail"])
		if err == nil && m["node"] != "" && m["chassis_id"] != "" {
			out[nodeRail{m["node"], rail}] = m["chassis_id"]
		}
	})
	return out, err
}

type nodeRail struct {
	node string
	rail int
}

// queryVector runs an instant query and hands each sample's labels to each.
func queryVector(ctx context.Context, base, query string, each func(labels map[string]string)) error {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/api/v1/query")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http(s) URL of a Prometheus", base)
	}
	u.RawQuery = url.Values{"query": {query}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := safefile.ReadAll(resp.Body, maxQueryBytes)
	if err != nil {
		return err
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
		return fmt.Errorf("%s answered %s, not a Prometheus query result: %v", base, resp.Status, err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" {
		return fmt.Errorf("%s answered %s: %s %s", base, resp.Status, answer.Status, answer.Error)
	}
	for _, r := range answer.Data.Result {
		each(r.Metric)
	}
	return nil
}

// fleetTopology is the switch of every node's rail as the fleet's Prometheus
// last said, for the probes' choice of witnesses (schedule.SwitchOf). It is
// refreshed in the background: the choice reads a map and never waits for
// the network, and knows nothing (every switch unknown) until the first
// answer, or when no Prometheus is given.
type fleetTopology struct {
	mu    sync.RWMutex
	rails map[nodeRail]string
}

func (t *fleetTopology) switchOf(node string, rail int) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c, ok := t.rails[nodeRail{node, rail}]
	return c, ok
}

// refresh asks base every interval until ctx ends; a failed answer keeps the
// last good one.
func (t *fleetTopology) refresh(ctx context.Context, base string, every time.Duration, logger *slog.Logger) {
	for {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rails, err := railSwitchesOfFleet(qctx, base)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("cannot read the fleet's rail switches from Prometheus; witnesses are chosen without them", "url", base, "err", err)
		case err == nil:
			t.mu.Lock()
			t.rails = rails
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
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
