package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// ErrPlanMissing is wrapped by Load's error when the plan file does not exist.
var ErrPlanMissing = errors.New("the cluster plan does not exist")

// missingPlanError says the plan is missing and how to write one; it is both
// ErrPlanMissing and the fs.ErrNotExist it came from.
type missingPlanError struct {
	path string
	err  error
}

func (e *missingPlanError) Error() string {
	return fmt.Sprintf("the cluster plan %s does not exist: write one from deploy/examples/cluster.yaml, the commented example plan in the roce_exporter repository (copy it to %s and fill in this cluster's networks, expectations and nodes)", e.path, e.path)
}

func (e *missingPlanError) Unwrap() []error { return []error{ErrPlanMissing, e.err} }

// Load reads, decodes and validates the plan at path and fills in its defaults. A
// missing file gives an error wrapping ErrPlanMissing that says how to write one; a file
// that cannot be read otherwise gives an *fs.PathError, also one that is not a regular
// file (a FIFO would block the start, /dev/zero never end) or is larger than
// MaxPlanBytes; a plan with problems gives ValidationErrors as Parse does.
func Load(path string) (*Plan, error) {
	data, err := safefile.ReadRegular(path, MaxPlanBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &missingPlanError{path: path, err: err}
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// MaxPlanBytes bounds the plan file. Written out in block style a RoCE node with 8 rails
// takes about 720 bytes, so 4 MiB hold some 5,800 nodes (more in flow style, or on
// InfiniBand with one interface list shared through an alias); BenchmarkParseLargePlan
// loads 5,500 in about 1 s. The bound is on what the worst 4 MiB cost, a flat list of
// two million one-character values: about 5 s and 1 GB allocated, most of it in
// go.yaml.in/yaml/v3 (BenchmarkParseWorstCaseYAML); four times the size costs four times
// that.
const MaxPlanBytes = 4 << 20

// Parse decodes and validates a plan and fills in its defaults. filename only labels
// error messages. The error, when not nil, is a ValidationErrors holding every problem
// found, each with its line and field.
//
// The order of work is: decode each field and check it on its own (type, range, syntax);
// fill in defaults for what the file left out; then check fields against each other
// (duplicates, addresses inside networks, timeout < interval). Cross-field checks see the
// defaults on purpose: a timeout written without an interval must fit the interval that
// will actually run.
func Parse(filename string, data []byte) (*Plan, error) {
	l := &loader{
		file:          filename,
		written:       map[string]position{},
		nodePath:      map[*Node]string{},
		interfacePath: map[*ComputeInterface]string{},
	}
	if len(data) > MaxPlanBytes {
		l.errorf("", "the plan is %d bytes, more than the limit of %d (4 MiB, some 5,800 RoCE nodes of 8 rails written out); this is not a plan file, or split the cluster into several plans", len(data), MaxPlanBytes)
		return nil, l.finishErrors()
	}
	root := l.document(data)
	if root == nil {
		return nil, l.finishErrors()
	}
	l.walkBudget = countValues(root) + maxAliasExpansion
	plan := l.decodePlan(root)
	if plan == nil || l.overBudget {
		// A plan cut short by the budget would only add errors about what is missing.
		return nil, l.finishErrors()
	}
	l.applyDefaults(plan)
	l.validate(plan)
	if l.errorCount > 0 {
		return nil, l.finishErrors()
	}
	plan.Warnings = l.warnings
	return plan, nil
}

type position struct{ line, column int }

// loader carries one Parse call: the errors so far and where each written value sits,
// so that checks run after decoding can still name a line.
type loader struct {
	file     string
	errs     ValidationErrors
	warnings []*FieldError
	// written maps the path of every non-null value in the file to its position. A path
	// that is absent here was left to its default.
	written map[string]position
	// errorCount counts every error; errs keeps only the first maxErrors in file order,
	// and once it has been cut to them, lastKept is the position of the last one.
	errorCount int
	errsCut    bool
	lastKept   position
	// aliasesFollowed bounds the work a file full of YAML aliases can cause.
	aliasesFollowed int
	// walked counts the values decoded, each time an alias brings them in again; past
	// walkBudget the walk stops and overBudget is set.
	walked, walkBudget int
	overBudget         bool
	// Paths of decoded items, for checks that run after decoding. Items that failed to
	// decode are left out of the plan, so a slice index is not a YAML index.
	nodePath      map[*Node]string
	interfacePath map[*ComputeInterface]string
	computePath   []string // parallel to Plan.Networks.Compute
	rdmaClassPath []string // parallel to Plan.Expectations.OtherRDMAClasses
}

// maxAliasesFollowed is far above what a hand-written plan uses; past it a file is
// most likely an alias bomb, and walking it would take minutes.
const maxAliasesFollowed = 10000

// maxAliasExpansion is how many values aliases may add to those written in the file. It
// allows the one alias use a plan has a reason for, an InfiniBand interface list (no IPs,
// so the same on every node) shared by 10,000 nodes of 8 rails (240,000 values), and stops
// the alias bomb of issue 12, 10,000 aliases of a 1,000-interface list (30 million values,
// past 120 s and 1.1 GB before), in about 0.4 s and 100 MB (BenchmarkParseAliasBomb).
const maxAliasExpansion = 250_000

// maxErrors is how many errors a failed plan reports; the rest are counted. A mistake
// repeated on every node of a large cluster is recognised from the first few, and
// collecting millions of messages cost more than a gigabyte.
const maxErrors = 100

// countValues counts the values of a document as walked without following aliases: the
// value of every mapping key and every list item.
func countValues(n *yaml.Node) int {
	total := 0
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			total += 1 + countValues(n.Content[i])
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			total += 1 + countValues(item)
		}
	}
	return total
}

// spend accounts for decoding one more value; false means the budget is spent and the
// walk must stop.
func (l *loader) spend(n *yaml.Node, path string) bool {
	if l.overBudget {
		return false
	}
	l.walked++
	if l.walked > l.walkBudget {
		l.overBudget = true
		l.errorAt(n, path, "the plan's YAML aliases expand to more than %d values beyond those written in the file (an alias bomb?); write the values out instead", maxAliasExpansion)
		return false
	}
	return true
}

// addError keeps the first maxErrors errors in file order and counts the rest. Sorting
// and cutting each time the list doubles keeps the cost at O(n log maxErrors); once cut,
// an error placed after the last one kept is only counted, without formatting it (a
// plan of a million bad values would otherwise format a million messages).
func (l *loader) addError(pos position, path, format string, args ...any) {
	l.errorCount++
	if l.errsCut && (pos.line > l.lastKept.line || pos.line == l.lastKept.line && pos.column > l.lastKept.column) {
		return
	}
	l.errs = append(l.errs, l.newError(pos, path, format, args...))
	if len(l.errs) >= 2*maxErrors {
		l.errs.sortByPosition()
		clear(l.errs[maxErrors:])
		l.errs = l.errs[:maxErrors]
		l.errsCut, l.lastKept = true, position{l.errs[maxErrors-1].Line, l.errs[maxErrors-1].Column}
	}
}

// finishErrors returns the errors in file order, with a last line counting those left out.
func (l *loader) finishErrors() ValidationErrors {
	l.errs.sortByPosition()
	if l.errorCount > maxErrors {
		l.errs = append(l.errs[:maxErrors], &FieldError{File: l.file,
			Msg: fmt.Sprintf("… and %d more errors; fix these and load the plan again", l.errorCount-maxErrors)})
	}
	return l.errs
}

// field is one value of the document and its path, e.g. nodes[1].interfaces[0].ip.
type field struct {
	path string
	node *yaml.Node
}

func (l *loader) isWritten(path string) bool {
	_, ok := l.written[path]
	return ok
}

// positionOf finds the line of path, or of its nearest written parent when the value was
// left out: an error about a missing or defaulted value points at the enclosing section.
func (l *loader) positionOf(path string) position {
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := l.written[p]; ok {
			return pos
		}
	}
	return position{}
}

func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

func childPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func (l *loader) newError(pos position, path, format string, args ...any) *FieldError {
	return &FieldError{File: l.file, Line: pos.line, Column: pos.column, Field: path, Msg: fmt.Sprintf(format, args...)}
}

// errorAt reports a problem at a node the walker holds.
func (l *loader) errorAt(n *yaml.Node, path, format string, args ...any) {
	l.addError(position{n.Line, n.Column}, path, format, args...)
}

// errorf reports a problem found after decoding, at the value's recorded position.
func (l *loader) errorf(path, format string, args ...any) {
	l.addError(l.positionOf(path), path, format, args...)
}

func (l *loader) warnf(path, format string, args ...any) {
	l.warnings = append(l.warnings, l.newError(l.positionOf(path), path, format, args...))
}

var yamlLinePrefix = regexp.MustCompile(`^yaml: line (\d+): `)

// document parses the bytes into the root mapping node, or reports why it can't.
func (l *loader) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) || (err == nil && (len(doc.Content) == 0 || isNull(doc.Content[0]))) {
		l.errorf("", "the plan is empty: it needs at least networks and nodes (see deploy/examples/cluster.yaml)")
		return nil
	}
	if err != nil {
		l.syntaxError(err)
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		l.syntaxError(err)
		return nil
	default:
		l.addError(position{next.Line, next.Column}, "", "a second YAML document starts here; a plan file holds exactly one")
		return nil
	}
	return doc.Content[0]
}

func (l *loader) syntaxError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLinePrefix.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	l.addError(position{line: line}, "", "YAML syntax: %s", msg)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// resolve follows a YAML alias to the anchored value; nil means the value must be skipped.
func (l *loader) resolve(n *yaml.Node, path string) *yaml.Node {
	if n.Kind != yaml.AliasNode {
		return n
	}
	l.aliasesFollowed++
	if l.aliasesFollowed == maxAliasesFollowed+1 {
		l.errorAt(n, path, "the plan expands more than %d YAML aliases; write the values out instead", maxAliasesFollowed)
	}
	if l.aliasesFollowed > maxAliasesFollowed || n.Alias == nil {
		return nil
	}
	return n.Alias
}

// fieldHandlers maps each key a mapping may hold to what decodes its value. Being the one
// list of known keys, it also drives the unknown-key error.
type fieldHandlers map[string]func(field)

// object walks a mapping and hands each value to its handler. A key with a null value
// counts as left out, so its default applies; required keys must not be left out.
// It reports whether f was a mapping at all.
func (l *loader) object(f field, handlers fieldHandlers, required ...string) bool {
	if !l.mapping(f) {
		return false
	}
	firstLine := map[string]int{}
	for i := 0; i+1 < len(f.node.Content); i += 2 {
		keyNode, valueNode := f.node.Content[i], f.node.Content[i+1]
		if keyNode.Kind != yaml.ScalarNode {
			l.errorAt(keyNode, f.path, "keys must be plain names, not %s", describe(keyNode))
			continue
		}
		name := keyNode.Value
		path := childPath(f.path, name)
		if keyNode.ShortTag() == "!!merge" {
			l.errorAt(keyNode, path, "YAML merge keys (<<) are not supported; write the fields out")
			continue
		}
		if line, dup := firstLine[name]; dup {
			l.errorAt(keyNode, path, "is set twice (first on line %d); keep one", line)
			continue
		}
		firstLine[name] = keyNode.Line
		if !l.spend(valueNode, path) {
			return true
		}
		handle, known := handlers[name]
		if !known {
			l.errorAt(keyNode, path, "unknown field %s", suggestField(name, handlers))
			continue
		}
		value := l.resolve(valueNode, path)
		if value == nil || isNull(value) {
			continue
		}
		l.written[path] = position{valueNode.Line, valueNode.Column}
		handle(field{path, value})
	}
	for _, name := range required {
		if path := childPath(f.path, name); !l.isWritten(path) {
			l.errorAt(f.node, path, "is required")
		}
	}
	return true
}

// mapping reports whether f is a mapping, and the error if not. Callers that decode many
// items check it before building their handlers, which a list of a million scalars would
// otherwise build a million times.
func (l *loader) mapping(f field) bool {
	if f.node.Kind != yaml.MappingNode {
		l.errorAt(f.node, f.path, "must be a mapping (key: value lines), not %s", describe(f.node))
		return false
	}
	return true
}

// suggestField names the closest known key for a typo, or lists them all.
func suggestField(name string, handlers fieldHandlers) string {
	known := slices.Sorted(maps.Keys(handlers))
	best, bestDistance := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestDistance {
			best, bestDistance = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("%q (did you mean %q?)", name, best)
	}
	return fmt.Sprintf("%q; this section takes: %s", name, strings.Join(known, ", "))
}

// editDistance is the Levenshtein distance, enough to catch a typo in a key.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			substitution := previous[j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, substitution)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}

// list walks a sequence and hands each item to each, with its index in the path.
func (l *loader) list(f field, each func(index int, item field)) {
	if f.node.Kind != yaml.SequenceNode {
		l.errorAt(f.node, f.path, "must be a list (lines starting with \"- \"), not %s", describe(f.node))
		return
	}
	for i, itemNode := range f.node.Content {
		path := fmt.Sprintf("%s[%d]", f.path, i)
		if !l.spend(itemNode, path) {
			return
		}
		item := l.resolve(itemNode, path)
		if item == nil {
			continue
		}
		if isNull(item) {
			l.errorAt(itemNode, path, "is empty")
			continue
		}
		l.written[path] = position{itemNode.Line, itemNode.Column}
		each(i, field{path, item})
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

func (l *loader) scalar(f field, want string) bool {
	if f.node.Kind != yaml.ScalarNode {
		l.errorAt(f.node, f.path, "must be %s, not %s", want, describe(f.node))
		return false
	}
	return true
}

// text takes any scalar as a string, so `name: 01` or `NCCL_IB_TIMEOUT: 22` need no quotes.
func (l *loader) text(f field) (string, bool) {
	if !l.scalar(f, "a single value") {
		return "", false
	}
	return f.node.Value, true
}

func (l *loader) integer(f field) (int, bool) {
	if !l.scalar(f, "a whole number") {
		return 0, false
	}
	var v int
	if f.node.ShortTag() != "!!int" || f.node.Decode(&v) != nil {
		l.errorAt(f.node, f.path, "must be a whole number, not %q", f.node.Value)
		return 0, false
	}
	return v, true
}

func (l *loader) number(f field) (float64, bool) {
	if !l.scalar(f, "a number") {
		return 0, false
	}
	var v float64
	tag := f.node.ShortTag()
	if (tag != "!!int" && tag != "!!float") || f.node.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		l.errorAt(f.node, f.path, "must be a number, not %q", f.node.Value)
		return 0, false
	}
	return v, true
}

func (l *loader) boolean(f field) (bool, bool) {
	if !l.scalar(f, "true or false") {
		return false, false
	}
	var v bool
	if f.node.ShortTag() != "!!bool" || f.node.Decode(&v) != nil {
		l.errorAt(f.node, f.path, "must be true or false, not %q", f.node.Value)
		return false, false
	}
	return v, true
}

// duration reads Go duration syntax ("90s", "1h30m"). Only a jitter may be zero.
func (l *loader) duration(f field, zeroAllowed bool) (time.Duration, bool) {
	s, ok := l.text(f)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
			l.errorAt(f.node, f.path, "%q has no unit: write e.g. 90s, 10m or 1h", s)
		} else {
			l.errorAt(f.node, f.path, "%q is not a duration: write e.g. 90s, 10m or 1h", s)
		}
		return 0, false
	}
	switch {
	case d < 0:
		l.errorAt(f.node, f.path, "must not be negative")
		return 0, false
	case d == 0 && !zeroAllowed:
		l.errorAt(f.node, f.path, "must be longer than 0s")
		return 0, false
	}
	return d, true
}

func (l *loader) size(f field) (SizeBytes, bool) {
	s, ok := l.text(f)
	if !ok {
		return 0, false
	}
	v, err := ParseSizeBytes(s)
	if err != nil {
		l.errorAt(f.node, f.path, "%v", err)
		return 0, false
	}
	if v < 1 {
		l.errorAt(f.node, f.path, "must be at least 1 byte")
		return 0, false
	}
	return v, true
}
