package reader

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// 128 devices full of garbage are thousands of bad files every scrape: the
// log must stay readable (a few warnings a minute and a count), not repeat
// every path at warn level once the remembered set is full.
func TestUnreadableFilesDoNotFloodTheLog(t *testing.T) {
	var logs testenv.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var w warnLimiter
	now := time.Unix(1700000000, 0)
	err := errors.New("not a number")
	for scrape := 0; scrape < 10; scrape++ {
		for i := 0; i < 128*65; i++ {
			w.log(logger, "rdma", fmt.Sprintf("/sys/class/infiniband/dev%d/counter%d", i/65, i%65), err, now)
		}
		now = now.Add(15 * time.Second)
	}
	warnings := strings.Count(logs.String(), "level=WARN")
	// 10 scrapes 15 s apart span three windows: at most a burst and a
	// summary in each.
	if warnings > 3*(warnBurst+1) {
		t.Errorf("%d warnings for 10 scrapes of 8,320 bad files", warnings)
	}
	if !strings.Contains(logs.String(), "more files were unreadable") {
		t.Error("no summary of the files held back")
	}
	if !strings.Contains(logs.String(), "counter0") {
		t.Error("the first bad files were not named")
	}
}
