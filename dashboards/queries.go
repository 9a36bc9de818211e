package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Macros are the values Queries substitutes for Grafana's built-in
// variables. $__rate_interval stands for max(4 × scrape interval, step):
// one minute covers the 15s scrape interval of the shipped configs.
var Macros = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "1m",
	"__interval_ms":   "60000",
	"__range":         "1h",
	"__range_s":       "3600",
	"__range_ms":      "3600000",
}

// Queries returns, for every dashboard file name, the PromQL expressions of
// the dashboard, ready to send to Prometheus' /api/v1/query: every panel
// target, then every query variable's label_values() as an equivalent
// PromQL expression. Grafana's macros are replaced by Macros, and each
// template variable by the regular expression its "All" option stands for
// (its allValue, ".*" when it has none), so a query selects what the
// dashboard shows with every variable on All. Expressions are listed once
// each, in dashboard order.
func Queries() (map[string][]string, error) {
	files, err := Files()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(files))
	for name, raw := range files {
		qs, err := QueriesFromJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = qs
	}
	return out, nil
}

// QueriesFromJSON is Queries for one dashboard JSON document (e.g. a
// committed file).
func QueriesFromJSON(raw []byte) ([]string, error) {
	tmpl, err := ParseTemplate(raw)
	if err != nil {
		return nil, err
	}
	all := map[string]string{}
	for _, v := range tmpl.Variables {
		all[v.Name] = v.All
	}
	return tmpl.Queries(all)
}

// Template is a dashboard's PromQL before Grafana fills in its variables.
type Template struct {
	// Exprs are the panel targets, then every query variable's Query, in
	// dashboard order, with the variable references left in.
	Exprs []string
	// Variables are the template variables in dashboard order.
	Variables []Variable
}

// Variable is one template variable of a dashboard.
type Variable struct {
	Name string
	// All is the regular expression its "All" option stands for (its
	// allValue, ".*" when it has none).
	All string
	// Query is the PromQL equivalent of its label_values() query, whose
	// result series carry the choices in label Label; both are empty when
	// the variable is not a query variable or has no PromQL equivalent.
	Query, Label string
}

// ParseTemplate reads a dashboard JSON document.
func ParseTemplate(raw []byte) (*Template, error) {
	var d struct {
		Panels     []jsonPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type     string          `json:"type"`
				Name     string          `json:"name"`
				Query    json.RawMessage `json:"query"`
				AllValue *string         `json:"allValue"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	tmpl := &Template{}
	var varQueries []string
	for _, v := range d.Templating.List {
		tv := Variable{Name: v.Name, All: ".*"}
		if v.AllValue != nil && *v.AllValue != "" {
			tv.All = *v.AllValue
		}
		if v.Type == "query" {
			var s string
			if err := json.Unmarshal(v.Query, &s); err != nil {
				var m struct {
					Query string `json:"query"`
				}
				if err := json.Unmarshal(v.Query, &m); err != nil {
					return nil, fmt.Errorf("variable %s: query is neither a string nor an object: %w", v.Name, err)
				}
				s = m.Query
			}
			pq, err := LabelValuesToPromQL(s)
			if err != nil {
				return nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
			if pq != "" {
				varQueries = append(varQueries, pq)
				tv.Query, tv.Label = pq, labelValuesRE.FindStringSubmatch(strings.TrimSpace(s))[2]
			}
		}
		tmpl.Variables = append(tmpl.Variables, tv)
	}
	var walk func(ps []jsonPanel)
	walk = func(ps []jsonPanel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Expr != "" {
					tmpl.Exprs = append(tmpl.Exprs, t.Expr)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	tmpl.Exprs = append(tmpl.Exprs, varQueries...)
	return tmpl, nil
}

// Queries substitutes values (variable name to the text Grafana puts in its
// place) and the macros into every expression; each result is listed once.
func (t *Template) Queries(values map[string]string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range t.Exprs {
		s, err := Substitute(e, values)
		if err != nil {
			return nil, err
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// SingleValue is the text Grafana's Prometheus data source puts in place of
// a multi-value variable when the user picks the one value v: v with the
// regular expression's special characters escaped, each backslash doubled
// for the PromQL string literal it lands in.
func SingleValue(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
}

type jsonPanel struct {
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []jsonPanel `json:"panels"`
}

// varRef matches Grafana variable references: ${name}, ${name:format},
// $name and the deprecated [[name]] / [[name:format]].
var varRef = regexp.MustCompile(`\$\{(\w+)(?::[\w]+)?\}|\$(\w+)|\[\[(\w+)(?::[\w]+)?\]\]`)

// Substitute replaces Grafana macros (see Macros) and template variables in
// expr: vars maps a variable name to its replacement. A reference to an
// unknown variable or macro is an error, so a typo cannot slip through as a
// literal "$instnace".
func Substitute(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := Macros[name]; ok {
			return v
		}
		if v, ok := vars[name]; ok {
			return v
		}
		missing = append(missing, m)
		return m
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("%q: unknown variable %s", expr, strings.Join(missing, ", "))
	}
	return out, nil
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*\S)\s*,\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// LabelValuesToPromQL turns a Grafana Prometheus variable query into the
// PromQL Grafana effectively evaluates: label_values(sel, label) becomes
// `count by (label) (sel)`. label_values(label) without a selector has no
// PromQL equivalent (it uses the label values API) and gives "".
// query_result(expr) gives expr.
func LabelValuesToPromQL(q string) (string, error) {
	q = strings.TrimSpace(q)
	if strings.HasPrefix(q, "query_result(") && strings.HasSuffix(q, ")") {
		return strings.TrimSuffix(strings.TrimPrefix(q, "query_result("), ")"), nil
	}
	m := labelValuesRE.FindStringSubmatch(q)
	if m == nil {
		return "", fmt.Errorf("unsupported variable query %q", q)
	}
	if m[1] == "" {
		return "", nil
	}
	return "count by (" + m[2] + ") (" + m[1] + ")", nil
}
