package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// FieldError is one problem in a plan, placed at the line the operator has to edit.
type FieldError struct {
	File string
	// Line and Column are 1-based. Line is 0 when nothing in the file can be pointed at,
	// e.g. a whole section is missing.
	Line   int
	Column int
	// Field is the path of the value, such as nodes[1].interfaces[0].ip; it is empty for
	// YAML syntax errors, which belong to no field.
	Field string
	Msg   string
}

// Error reads like a compiler message so editors and terminals can jump to the line:
// "cluster.yaml:14: nodes[1].interfaces[0].ip: 192.168.200.12/24 is outside ...".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ValidationErrors holds every problem found in one plan, so the operator can fix them all
// in one edit instead of one per restart.
type ValidationErrors []*FieldError

func (errs ValidationErrors) Error() string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As reach a single *FieldError.
func (errs ValidationErrors) Unwrap() []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// sortByPosition orders errors as they appear in the file, which is the order a reader
// fixes them in; errors without a line (missing sections) come first.
func (errs ValidationErrors) sortByPosition() {
	slices.SortStableFunc(errs, func(a, b *FieldError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}
