package reader

import (
	"log/slog"
	"sync"
	"time"
)

// warnLimiter decides at which level a skipped file is logged: the first
// failure of a path at warn, its repeats at debug, so a permanently broken
// file does not flood the log every scrape. Distinct paths are limited too:
// a node with a hundred garbage devices has thousands of bad files, and
// warning about each one (0.75 MB of log per scrape) buries everything
// else. Beyond warnBurst new paths a minute they go to debug, and one line
// a minute says how many were held back.
type warnLimiter struct {
	mu         sync.Mutex
	seen       map[string]bool
	window     time.Time
	warned     int
	suppressed int
}

const (
	// maxWarnedPaths bounds the memory spent remembering paths; past it a
	// path may be warned about again, within the rate limit.
	maxWarnedPaths = 4096
	warnBurst      = 20
	warnWindow     = time.Minute
)

func (w *warnLimiter) log(logger *slog.Logger, source, path string, err error, now time.Time) {
	w.mu.Lock()
	first := !w.seen[path]
	if first {
		if w.seen == nil || len(w.seen) >= maxWarnedPaths {
			w.seen = map[string]bool{}
		}
		w.seen[path] = true
	}
	var held int
	if now.Sub(w.window) >= warnWindow {
		held = w.suppressed
		w.window, w.warned, w.suppressed = now, 0, 0
	}
	warn := first && w.warned < warnBurst
	if warn {
		w.warned++
	} else if first {
		w.suppressed++
	}
	w.mu.Unlock()
	if held > 0 {
		logger.Warn("more files were unreadable than are worth a warning each; they were logged at debug level", "files", held, "per", warnWindow)
	}
	if warn {
		logger.Warn("skipping unreadable file", "collector", source, "path", path, "err", err)
	} else {
		logger.Debug("skipping unreadable file", "collector", source, "path", path, "err", err)
	}
}
