package main

import (
	"os"
	"strings"

	"golang.org/x/text/width"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
)

// The language of the doctor's text and the node page: --lang, else the
// locale (LC_ALL, LC_MESSAGES, LANG); English by default. The doctor's JSON
// and /metrics stay English whatever the language: programs read them.

// printer is the language the operator asked for; a bad --lang was refused
// when the flags were parsed (checkLang).
func (a *app) printer() *i18n.Printer {
	if *a.lang != "" {
		tag, _ := i18n.Parse(*a.lang)
		return i18n.New(tag)
	}
	return i18n.New(i18n.FromEnv(os.Getenv))
}

func (a *app) checkLang() error {
	if *a.lang == "" {
		return nil
	}
	_, err := i18n.Parse(*a.lang)
	return err
}

// findingMessage and findingFix are a finding's message and fix in p's
// language: the English as it is, else its Text translated (a finding made
// without one, as from JSON, keeps its English).
func findingMessage(p *i18n.Printer, f health.Finding) string {
	if p.English() || f.MessageText.Empty() {
		return f.Message
	}
	return node.ValidUTF8(p.Text(f.MessageText))
}

func findingFix(p *i18n.Printer, f health.Finding) string {
	if p.English() || f.FixText.Empty() {
		return f.Fix
	}
	return node.ValidUTF8(p.Text(f.FixText))
}

// displayWidth is how many terminal columns s takes: a CJK character takes
// two, so the doctor's columns stay aligned in Chinese.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// padRight pads s with spaces to w columns.
func padRight(s string, w int) string {
	if d := w - displayWidth(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}
