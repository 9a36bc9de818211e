package parse

import (
	"fmt"
	"io"
	"strings"
)

// MaxOutputBytes bounds how much of a probe's output is kept and read, by
// the runners and by `probe parse` alike. Real runs print a few hundred
// kilobytes at most (NCCL_DEBUG=INFO on many ranks); a runaway child must
// not make the exporter allocate without limit.
const MaxOutputBytes = 32 << 20

// maxMessages bounds the warnings and errors kept per result: a repeated
// warning per iteration would otherwise grow a result to the size of the log.
const maxMessages = 64

// maxMessageLen keeps a single kept line short enough for a log or a label.
const maxMessageLen = 512

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxOutputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading probe output: %w", err)
	}
	if len(data) > MaxOutputBytes {
		return nil, fmt.Errorf("probe output larger than %d bytes", MaxOutputBytes)
	}
	return data, nil
}

// splitLines accepts \n, \r\n and the lone \r that some terminals and
// progress printers leave in captured output.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// messageList collects distinct lines, in first-seen order, up to maxMessages.
type messageList struct {
	items []string
	seen  map[string]bool
}

func (m *messageList) add(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > maxMessageLen {
		line = strings.ToValidUTF8(line[:maxMessageLen], "")
	}
	if m.seen == nil {
		m.seen = make(map[string]bool)
	}
	if m.seen[line] || len(m.items) >= maxMessages {
		return
	}
	m.seen[line] = true
	m.items = append(m.items, line)
}

func (m *messageList) list() []string { return m.items }

// outputSeen is what a parser saw in an output besides its results and its
// failure lines.
type outputSeen struct {
	// recognized: some line was the test program's own (a banner, a table
	// header, NCCL's log), so the text is the output of a run.
	recognized bool
	// unreadable: a result row was there but its numbers were not valid.
	unreadable bool
}

// noResultsReason says why an output without a single result row failed:
// not the program's output at all when nothing in it was, the program's
// failure when it printed error lines, unreadable when its rows were
// invalid, otherwise cut short.
func (s outputSeen) noResultsReason(printedErrors bool) string {
	switch {
	case !s.recognized && !s.unreadable:
		return ReasonNotToolOutput
	case printedErrors:
		return ReasonExecError
	case s.unreadable:
		return ReasonParseError
	}
	return ReasonIncompleteOutput
}
