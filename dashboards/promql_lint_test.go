package dashboards

import (
	"fmt"
	"strings"
	"testing"
)

// A small PromQL scanner, enough to re-implement the dashboard-linter
// target rules (rate interval, counter aggregation, instance/device
// filters) without a dependency on the Prometheus module. Whether the
// expressions parse is checked by promtool in TestQueriesParseWithPromtool.

type tokKind int

const (
	tkIdent    tokKind = iota
	tkString           // "..." '...' `...`
	tkMatchers         // {...}, text holds the inside
	tkRange            // [...], text holds the inside
	tkLParen
	tkRParen
	tkComma
	tkNumber
	tkOp
)

type token struct {
	kind tokKind
	text string
}

func lexPromQL(s string) ([]token, error) {
	var toks []token
	i := 0
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	// skipString returns the index after the string starting at i.
	skipString := func(i int) (int, error) {
		q := s[i]
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\\' && q != '`' {
				j++
				continue
			}
			if s[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d", i)
	}
	// block returns the inside of a {...} or [...] starting at i, and the index after it.
	block := func(i int, open, close byte) (string, int, error) {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '"', '\'', '`':
				k, err := skipString(j)
				if err != nil {
					return "", 0, err
				}
				j = k - 1
			case open:
				return "", 0, fmt.Errorf("nested %c at %d", open, j)
			case close:
				return s[i+1 : j], j + 1, nil
			}
		}
		return "", 0, fmt.Errorf("unclosed %c at %d", open, i)
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tkString, s[i:j]})
			i = j
		case c == '{':
			in, j, err := block(i, '{', '}')
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tkMatchers, in})
			i = j
		case c == '[':
			in, j, err := block(i, '[', ']')
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tkRange, in})
			i = j
		case c == '(':
			toks = append(toks, token{tkLParen, "("})
			i++
		case c == ')':
			toks = append(toks, token{tkRParen, ")"})
			i++
		case c == ',':
			toks = append(toks, token{tkComma, ","})
			i++
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (isIdent(s[j]) || s[j] == '.') {
				j++
			}
			toks = append(toks, token{tkNumber, s[i:j]})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			toks = append(toks, token{tkIdent, s[i:j]})
			i = j
		case strings.ContainsRune("+-*/%^=!<>~", rune(c)):
			j := i
			for j < len(s) && strings.ContainsRune("=!<>~", rune(s[j])) && j-i < 2 || j == i {
				j++
			}
			toks = append(toks, token{tkOp, s[i:j]})
			i = j
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %c at %d", c, i)
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	return toks, nil
}

// keywords are identifiers that are not metric names.
var keywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"inf": true, "Inf": true, "nan": true, "NaN": true,
}

// labelListKeywords are followed by a parenthesised list of label names.
var labelListKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// rangeFuncs may (and must) take a range vector.
var rangeFuncs = map[string]bool{"rate": true, "irate": true, "increase": true}

// matcher is one label matcher of a selector.
type matcher struct{ name, op, value string }

func parseMatchers(in string) ([]matcher, error) {
	var out []matcher
	rest := strings.TrimSpace(in)
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '_' || rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= 'A' && rest[i] <= 'Z' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		name := rest[:i]
		rest = strings.TrimSpace(rest[i:])
		op := ""
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, o) {
				op = o
				break
			}
		}
		if name == "" || op == "" {
			return nil, fmt.Errorf("bad matcher in {%s}", in)
		}
		rest = strings.TrimSpace(rest[len(op):])
		if rest == "" || rest[0] != '"' {
			return nil, fmt.Errorf("matcher %s%s without a double-quoted value in {%s}", name, op, in)
		}
		j := 1
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(rest) {
			return nil, fmt.Errorf("unterminated value in {%s}", in)
		}
		out = append(out, matcher{name, op, rest[1:j]})
		rest = strings.TrimSpace(rest[j+1:])
		if strings.HasPrefix(rest, ",") {
			rest = strings.TrimSpace(rest[1:])
		} else if rest != "" {
			return nil, fmt.Errorf("expected , in {%s}", in)
		}
	}
	return out, nil
}

// selector is a vector selector found in an expression.
type selector struct {
	metric   string
	matchers []matcher
	ranged   bool   // followed by [..]
	rng      string // the range
	call     string // innermost enclosing function call ("" at top level)
}

func (s selector) has(name, op, value string) bool {
	for _, m := range s.matchers {
		if m.name == name && m.op == op && m.value == value {
			return true
		}
	}
	return false
}

// analyse finds the selectors of an expression and checks the structure
// that the lint rules need: balanced parentheses, ranges only inside
// rate/irate/increase, every rate/irate/increase given a range.
func analyse(expr string) ([]selector, []string) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, []string{err.Error()}
	}
	type frame struct {
		fn       string // function or aggregation called with this paren, "" for grouping
		labels   bool   // a by/on/... label list
		hasRange bool
	}
	var stack []frame
	var sels []selector
	var problems []string
	enclosingCall := func() (string, int) {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].labels {
				continue
			}
			if stack[i].fn != "" {
				return stack[i].fn, i
			}
		}
		return "", -1
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func(k int) *token {
			if i+k < len(toks) {
				return &toks[i+k]
			}
			return nil
		}
		switch t.kind {
		case tkLParen:
			f := frame{}
			if i > 0 && toks[i-1].kind == tkIdent {
				prev := toks[i-1].text
				if labelListKeywords[prev] {
					f.labels = true
				} else if !keywords[prev] {
					f.fn = prev
				}
			}
			stack = append(stack, f)
		case tkRParen:
			if len(stack) == 0 {
				return nil, append(problems, "unbalanced )")
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if rangeFuncs[top.fn] && !top.hasRange {
				problems = append(problems, top.fn+"() without a range")
			}
		case tkRange:
			problems = append(problems, "range ["+t.text+"] not directly after a selector")
		case tkMatchers:
			problems = append(problems, "selector {"+t.text+"} without a metric name")
		case tkIdent:
			if len(stack) > 0 && stack[len(stack)-1].labels {
				continue // label name in by (...) etc.
			}
			if keywords[t.text] {
				continue
			}
			if n := next(1); n != nil && (n.kind == tkLParen || n.kind == tkIdent && (n.text == "by" || n.text == "without")) {
				continue // function call, or aggregation with a by/without clause
			}
			s := selector{metric: t.text}
			if n := next(1); n != nil && n.kind == tkMatchers {
				ms, err := parseMatchers(n.text)
				if err != nil {
					problems = append(problems, err.Error())
				}
				s.matchers = ms
				i++
			}
			if n := next(1); n != nil && n.kind == tkRange {
				s.ranged = true
				s.rng = n.text
				i++
			}
			call, idx := enclosingCall()
			s.call = call
			if s.ranged {
				if !rangeFuncs[call] {
					problems = append(problems, fmt.Sprintf("range vector %s[%s] outside rate/irate/increase", s.metric, s.rng))
				} else {
					stack[idx].hasRange = true
				}
			}
			sels = append(sels, s)
		}
	}
	if len(stack) != 0 {
		problems = append(problems, "unbalanced (")
	}
	return sels, problems
}

// lintExpr applies the target rules to one expression. counters says which
// metrics are counters; deviceMetrics which carry a device label that must
// be filtered when the dashboard has a device variable.
func lintExpr(expr string, counters, deviceMetrics map[string]bool, hasDeviceVar bool) []string {
	sels, problems := analyse(expr)
	for _, s := range sels {
		if s.ranged && s.rng != "$__rate_interval" {
			problems = append(problems, fmt.Sprintf("%s: range [%s], want [$__rate_interval]", s.metric, s.rng))
		}
		if (counters[s.metric] || strings.HasSuffix(s.metric, "_total")) && !(s.ranged && rangeFuncs[s.call]) {
			problems = append(problems, fmt.Sprintf("counter %s not wrapped in rate/irate/increase", s.metric))
		}
		recorded := strings.Contains(s.metric, ":")
		if recorded && !recordedMetrics[s.metric] {
			problems = append(problems, fmt.Sprintf("%s: no recording rule of alerts/ records it", s.metric))
			continue
		}
		if !recorded && !strings.HasPrefix(s.metric, "roce_") {
			problems = append(problems, fmt.Sprintf("selector of %s: dashboards only query roce_ metrics", s.metric))
			continue
		}
		// Fleet aggregates have summed the nodes away.
		if !fleetMetrics[s.metric] && !s.has("instance", "=~", "$instance") {
			problems = append(problems, fmt.Sprintf(`%s: no instance=~"$instance"`, s.metric))
		}
		// "$device|" also keeps the series with an empty device: findings about
		// the node as a whole.
		if hasDeviceVar && deviceMetrics[s.metric] && !s.has("device", "=~", "$device") && !s.has("device", "=~", "$device|") {
			problems = append(problems, fmt.Sprintf(`%s: no device=~"$device"`, s.metric))
		}
	}
	return problems
}

func TestLintExprCatchesViolations(t *testing.T) {
	counters := map[string]bool{"roce_hw_out_of_buffer_total": true}
	devs := map[string]bool{"roce_hw_out_of_buffer_total": true, "roce_port_up": true}
	for _, tc := range []struct {
		expr string
		want string // substring of one problem; "" = clean
	}{
		{`rate(roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"}[$__rate_interval])`, ""},
		{`sum by (instance) (increase(roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"}[$__rate_interval]))`, ""},
		{`count(roce_port_up{instance=~"$instance", device=~"$device"} == 0) or vector(0)`, ""},
		{`count by (instance) (roce_port_up{instance=~"$instance", device=~"$device"})`, ""},
		{`sum without (port) (rate(roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"}[$__rate_interval]))`, ""},
		{`sum by (instance) (roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"})`, "not wrapped"},
		{`rate(roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"}[5m])`, "want [$__rate_interval]"},
		{`roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"}`, "not wrapped"},
		{`sum(roce_hw_out_of_buffer_total{instance=~"$instance", device=~"$device"})`, "not wrapped"},
		{`max_over_time(roce_port_up{instance=~"$instance", device=~"$device"}[$__rate_interval])`, "outside rate"},
		{`rate(roce_port_up{instance=~"$instance", device=~"$device"})`, "without a range"},
		{`roce_port_up{device=~"$device"}`, `no instance=~"$instance"`},
		{`roce_port_up{instance="$instance", device=~"$device"}`, `no instance=~"$instance"`},
		{`roce_port_up{instance=~"$instance"}`, `no device=~"$device"`},
		{`roce_port_up{instance=~"$instance", device=~"$device"} * on(instance) group_left() up`, "only query roce_"},
		{`{__name__="roce_port_up"}`, "without a metric name"},
		{`rate(roce_port_up{instance=~"$instance", device=~"$device"}[$__rate_interval]`, "unbalanced ("},
		{`roce_port_up{instance=~"$instance"`, "unclosed {"},
	} {
		problems := lintExpr(tc.expr, counters, devs, true)
		got := strings.Join(problems, "; ")
		if tc.want == "" && len(problems) > 0 {
			t.Errorf("%s: unexpected problems: %s", tc.expr, got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want one containing %q", tc.expr, got, tc.want)
		}
	}
}
