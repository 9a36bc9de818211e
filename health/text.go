package health

import (
	"fmt"
	"strings"
)

// Text is a message kept as its English format and its arguments, so that the
// doctor and the node page can print it in the reader's language (package
// i18n looks the format up in its catalogues). Its String is the English and
// exactly fmt.Sprintf(Format, Args...): Finding.Message, the JSON and the
// metrics carry that.
//
// An argument may itself be a Text (a clause, a list of them): it is printed
// in the same language as the message around it.
type Text struct {
	Format string
	Args   []any
}

// Textf is the message fmt.Sprintf(format, args...) would write. Every
// check's message and fix is made with it, format a constant: the
// translations are keyed on the format, and a test reads the formats from
// this package's source to hold every one of them to a translation.
// tools/i18nconv turns fmt.Sprintf calls and string literals into Textf.
func Textf(format string, args ...any) Text { return Text{Format: format, Args: args} }

// String is the English.
func (t Text) String() string { return fmt.Sprintf(t.Format, t.Args...) }

// Empty reports whether t says nothing.
func (t Text) Empty() bool { return t.Format == "" }

// JoinTexts joins parts with sep, each part printed in the reader's language.
func JoinTexts(parts []Text, sep string) Text {
	if len(parts) == 0 {
		return Text{}
	}
	sep = strings.ReplaceAll(sep, "%", "%%")
	args := make([]any, len(parts))
	for i, p := range parts {
		args[i] = p
	}
	return Text{Format: "%s" + strings.Repeat(sep+"%s", len(parts)-1), Args: args}
}

// MapStrings returns t with f applied to every string among its arguments,
// in clauses too: the shell quoting of the node's names, which the English
// fix gets as a whole, reaches the fix in every language this way.
func (t Text) MapStrings(f func(string) string) Text {
	if len(t.Args) == 0 {
		return t
	}
	args := make([]any, len(t.Args))
	for i, a := range t.Args {
		switch v := a.(type) {
		case string:
			args[i] = f(v)
		case Text:
			args[i] = v.MapStrings(f)
		case []string:
			m := make([]string, len(v))
			for j, s := range v {
				m[j] = f(s)
			}
			args[i] = m
		case []Text:
			m := make([]Text, len(v))
			for j, s := range v {
				m[j] = s.MapStrings(f)
			}
			args[i] = m
		default:
			args[i] = a
		}
	}
	return Text{Format: t.Format, Args: args}
}
