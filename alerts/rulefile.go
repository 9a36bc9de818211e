package alerts

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// RuleFile is a Prometheus rule file, as the tests, the benchmarks and the
// end-to-end checks read the shipped rules: one type, so that a field the
// rules start to use is known everywhere (ReadRuleFile refuses unknown ones).
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is one group of a rule file.
type RuleGroup struct {
	Name string `yaml:"name"`
	// Interval is the group's evaluation interval ("" : the global one).
	Interval string `yaml:"interval"`
	Limit    int    `yaml:"limit"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is an alerting rule (Alert) or a recording rule (Record).
type Rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Name is the alert's or the recorded series' name.
func (r Rule) Name() string { return r.Alert + r.Record }

// ReadRuleFile reads a rule file, refusing fields RuleFile does not know.
func ReadRuleFile(path string) (*RuleFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f RuleFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}
