// Package loadtest hammers an HTTP endpoint with concurrent clients and
// reports errors and latency: the load test of the exporter (a Go test in
// CI, and tools/benchtool for the full 60-second run).
package loadtest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Result summarises a run.
type Result struct {
	Clients        int
	Duration       time.Duration
	Requests       int
	Errors         int
	FirstError     string
	P50, P99, Max  time.Duration
	BytesPerScrape int
}

func (r Result) String() string {
	return fmt.Sprintf("%d clients for %s: %d requests (%.0f/s), %d errors, latency p50 %s p99 %s max %s, %d bytes per response",
		r.Clients, r.Duration, r.Requests, float64(r.Requests)/r.Duration.Seconds(), r.Errors,
		r.P50.Round(time.Microsecond*100), r.P99.Round(time.Microsecond*100), r.Max.Round(time.Microsecond*100), r.BytesPerScrape)
}

// Run sends GET requests from clients goroutines, each on its own
// connection, for duration. Any transport error, non-200 status or empty
// body counts as an error.
func Run(url string, clients int, duration time.Duration) Result {
	var mu sync.Mutex
	var lat []time.Duration
	res := Result{Clients: clients, Duration: duration}
	stop := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			var mine []time.Duration
			errors, size := 0, 0
			first := ""
			for time.Now().Before(stop) {
				begin := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					errors++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n == 0 {
					errors++
					if first == "" {
						first = fmt.Sprintf("HTTP %d, %d bytes", resp.StatusCode, n)
					}
					continue
				}
				size = int(n)
				mine = append(mine, time.Since(begin))
			}
			mu.Lock()
			lat = append(lat, mine...)
			res.Errors += errors
			if res.FirstError == "" {
				res.FirstError = first
			}
			if size > 0 {
				res.BytesPerScrape = size
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Requests = len(lat) + res.Errors
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		res.P50, res.P99, res.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return res
}
