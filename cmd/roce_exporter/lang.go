package main

import (
	"os"

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
// without one, as from JSON, keeps its English). Escapes and control
// characters a name from the node may carry are stripped as health strips
// them from the English (node.Printable); the fix's names are shell-quoted
// already (health quotes FixText's arguments).
func findingMessage(p *i18n.Printer, f health.Finding) string {
	if p.English() || f.MessageText.Empty() {
		return f.Message
	}
	return node.ValidUTF8(node.Printable(p.Text(f.MessageText)))
}

func findingFix(p *i18n.Printer, f health.Finding) string {
	if p.English() || f.FixText.Empty() {
		return f.Fix
	}
	return node.ValidUTF8(node.Printable(p.Text(f.FixText)))
}
