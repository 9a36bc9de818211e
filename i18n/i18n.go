// Package i18n prints the doctor's and the node page's text in the reader's
// language: English, or Simplified Chinese for an operator whose locale is
// zh_CN (LC_ALL, then LC_MESSAGES, then LANG, as POSIX reads them) or who
// asks with --lang=zh-CN.
//
// The translations are keyed on the English format: a check's message is a
// health.Text, its format and its arguments, and the doctor's own lines are
// formats too. A format without a translation prints in English, with the
// same arguments, so a check added without one still says everything. The
// catalogues are Go maps, one file per language (zh_CN.go), loaded into a
// golang.org/x/text/message catalogue.
//
// Numbers, names and commands are printed as in English: the arguments are
// formatted by package fmt, not by the locale (no digit grouping), and the
// translations keep commands, interface and metric names as they are.
package i18n

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"

	"github.com/roce-exporter/roce_exporter/health"
)

// The languages: English, the default, and Simplified Chinese.
var (
	English = language.English
	Chinese = language.SimplifiedChinese
)

// catalogues are the translations per language: English format → format in
// that language.
var catalogues = map[language.Tag]map[string]string{
	Chinese: zhCN,
}

var supported = []language.Tag{English, Chinese}

var matcher = language.NewMatcher(supported)

var defaultCatalog = mustBuild(catalogues)

func mustBuild(cats map[language.Tag]map[string]string) catalog.Catalog {
	c, err := build(cats)
	if err != nil {
		panic(err)
	}
	return c
}

func build(cats map[language.Tag]map[string]string) (catalog.Catalog, error) {
	b := catalog.NewBuilder(catalog.Fallback(English))
	for _, tag := range slices.SortedFunc(maps.Keys(cats), func(a, b language.Tag) int { return strings.Compare(a.String(), b.String()) }) {
		for _, en := range slices.Sorted(maps.Keys(cats[tag])) {
			if err := b.SetString(tag, en, cats[tag][en]); err != nil {
				return nil, fmt.Errorf("%s translation of %q: %w", tag, en, err)
			}
		}
	}
	return b, nil
}

// Translations is a copy of tag's catalogue, English format → translation;
// nil for English. Tests hold output to it.
func Translations(tag language.Tag) map[string]string { return maps.Clone(catalogues[tag]) }

// Printer prints Texts and formats in one language.
type Printer struct {
	tag language.Tag
	p   *message.Printer
}

// New is a printer for tag, which Parse or FromEnv gave.
func New(tag language.Tag) *Printer { return newWith(tag, defaultCatalog) }

func newWith(tag language.Tag, c catalog.Catalog) *Printer {
	return &Printer{tag: tag, p: message.NewPrinter(tag, message.Catalog(c))}
}

// Tag is the printer's language.
func (p *Printer) Tag() language.Tag { return p.tag }

// English reports whether the printer prints English, which is the text as
// it was written.
func (p *Printer) English() bool { return p == nil || p.tag == English }

// HTMLLang is the language for an HTML lang attribute: en or zh-CN.
func (p *Printer) HTMLLang() string {
	if p.English() {
		return "en"
	}
	return "zh-CN"
}

// Text prints t in the printer's language; English is exactly t.String().
func (p *Printer) Text(t health.Text) string {
	if p.English() {
		return t.String()
	}
	return p.p.Sprintf(t.Format, p.wrap(t.Args)...)
}

// Sprintf prints format, translated, with args formatted as fmt does.
func (p *Printer) Sprintf(format string, args ...any) string {
	if p.English() {
		return fmt.Sprintf(format, args...)
	}
	return p.p.Sprintf(format, p.wrap(args)...)
}

// Word is a word or phrase without verbs (a status, a label), translated.
func (p *Printer) Word(s string) string {
	if p.English() {
		return s
	}
	return p.p.Sprintf(message.Key(s, s))
}

// wrap keeps the arguments out of the locale's number formatting, and prints
// the Texts among them in the printer's language.
func (p *Printer) wrap(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case health.Text:
			out[i] = verbatim{p.Text(v)}
		default:
			out[i] = verbatim{a}
		}
	}
	return out
}

// verbatim formats its value as package fmt does, whatever the printer's
// locale.
type verbatim struct{ v any }

func (v verbatim) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), v.v)
}

// Parse reads a --lang value: en, zh-CN, zh, or a locale name as in LANG
// (zh_CN.UTF-8). A language without a catalogue is an error.
func Parse(s string) (language.Tag, error) {
	tag, ok := match(s)
	if !ok {
		return English, fmt.Errorf("unknown language %q: en or zh-CN", s)
	}
	return tag, nil
}

// FromEnv is the language the locale asks for: the first of LC_ALL,
// LC_MESSAGES and LANG that is set decides, as in POSIX; zh_CN (any Chinese
// locale in Simplified script: zh_CN, zh_SG, zh) is Chinese, anything else,
// C and POSIX included, English.
func FromEnv(getenv func(string) string) language.Tag {
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if s := getenv(v); s != "" {
			tag, ok := match(s)
			if !ok {
				return English
			}
			return tag
		}
	}
	return English
}

// match maps a language name or locale name onto a supported language.
func match(s string) (language.Tag, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".@"); i >= 0 { // zh_CN.UTF-8, sr_RS@latin
		s = s[:i]
	}
	if s == "" || s == "C" || s == "POSIX" {
		return English, s != ""
	}
	tag, err := language.Parse(strings.ReplaceAll(s, "_", "-"))
	if err != nil {
		return English, false
	}
	_, i, conf := matcher.Match(tag)
	if conf < language.High {
		return English, false
	}
	return supported[i], true
}
