package i18n

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/language"

	"github.com/roce-exporter/roce_exporter/health"
)

// verbs reads a format as package fmt does: the argument each verb prints
// (explicit [n] indexes included) and the verb with its flags, width and
// precision. An argument printed twice must be printed alike.
func verbs(format string) (map[int]string, error) {
	out := map[int]string{}
	arg := 1
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		var spec strings.Builder
		for i < len(format) {
			c := format[i]
			if c == '[' {
				end := strings.IndexByte(format[i:], ']')
				if end < 0 {
					return nil, fmt.Errorf("unclosed [ in %q", format)
				}
				n, err := strconv.Atoi(format[i+1 : i+end])
				if err != nil || n < 1 {
					return nil, fmt.Errorf("bad index in %q", format)
				}
				arg = n
				i += end + 1
				continue
			}
			if strings.IndexByte("+-# 0123456789.", c) >= 0 {
				spec.WriteByte(c)
				i++
				continue
			}
			if c == '*' {
				return nil, fmt.Errorf("* width in %q: not supported here", format)
			}
			spec.WriteByte(c)
			break
		}
		if i >= len(format) {
			return nil, fmt.Errorf("format %q ends inside a verb", format)
		}
		v := spec.String()
		if prev, ok := out[arg]; ok && prev != v {
			return nil, fmt.Errorf("argument %d printed as %%%s and %%%s in %q", arg, prev, v, format)
		}
		out[arg] = v
		arg++
	}
	return out, nil
}

func TestVerbs(t *testing.T) {
	for _, c := range []struct {
		format string
		want   map[int]string
	}{
		{"a %s b %d%%", map[int]string{1: "s", 2: "d"}},
		{"%[2]s then %[1]d", map[int]string{1: "d", 2: "s"}},
		{"%.0[6]f and %[7]s", map[int]string{6: ".0f", 7: "s"}},
		{"%-10s|%q", map[int]string{1: "-10s", 2: "q"}},
		{"100%% done", map[int]string{}},
	} {
		got, err := verbs(c.format)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("verbs(%q) = %v, %v; want %v", c.format, got, err, c.want)
		}
	}
	if _, err := verbs("%[1]s %[1]d"); err == nil {
		t.Error("an argument printed two ways is not reported")
	}
}

// hasWords: the format says something in English beyond its verbs, so it
// needs a translation ("%s: %s" and "" do not).
var reWord = regexp.MustCompile(`[A-Za-z]{2,}`)

func hasWords(format string) bool {
	return reWord.MatchString(regexp.MustCompile(`%[-+# 0-9.\[\]]*[a-zA-Z%]`).ReplaceAllString(format, ""))
}

// TestEveryFormatTranslated: every format the checks use has a Chinese
// translation. A check added without one fails here, naming the format and
// where it is; add it to zh_CN.go.
func TestEveryFormatTranslated(t *testing.T) {
	formats := healthFormats(t)
	if len(formats) < 300 {
		t.Fatalf("only %d Textf formats found in package health: the scan is broken", len(formats))
	}
	seen := map[string]bool{}
	for _, f := range formats {
		if seen[f.text] || !hasWords(f.text) {
			continue
		}
		seen[f.text] = true
		if _, ok := zhCN[f.text]; !ok {
			t.Errorf("%s: no Chinese for %q", f.at, f.text)
		}
	}
	t.Logf("%d formats of the checks translated", len(seen))
}

// TestPlaceholdersMatch: each translation prints the same arguments with the
// same verbs as its English.
func TestPlaceholdersMatch(t *testing.T) {
	for en, zh := range zhCN {
		want, err := verbs(en)
		if err != nil {
			t.Errorf("English %q: %v", en, err)
			continue
		}
		got, err := verbs(zh)
		if err != nil {
			t.Errorf("Chinese of %q: %v", en, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("placeholders differ:\n  en %q %v\n  zh %q %v", en, want, zh, got)
		}
		if prose(en) && !containsHan(zh) {
			t.Errorf("the Chinese of %q has no Chinese: %q", en, zh)
		}
	}
}

var rePhrase = regexp.MustCompile(`[a-z]{2,} [a-z]{2,} [a-z]{2,}`)

// prose: the format has English words outside its `commands`, so its
// translation must have Chinese.
func prose(format string) bool {
	outside := regexp.MustCompile("`[^`]*`").ReplaceAllString(format, "")
	return rePhrase.MatchString(outside)
}

func containsHan(s string) bool {
	for _, r := range s {
		if r >= 0x4e00 && r <= 0x9fff {
			return true
		}
	}
	return false
}

func TestTextEnglishIsSprintf(t *testing.T) {
	p := New(English)
	tx := health.Textf("MTU %d, the plan expects %d (%s)", 1500, 9000, health.Textf("%d%% of %s", 5, "x"))
	if got, want := p.Text(tx), "MTU 1500, the plan expects 9000 (5% of x)"; got != want {
		t.Errorf("English = %q, want %q", got, want)
	}
}

func TestTextChinese(t *testing.T) {
	p := New(Chinese)
	// Numbers keep fmt's formatting (no locale grouping), nested Texts are
	// translated too.
	tx := health.Textf("MTU %d, the plan expects %d", 1234567, 9000)
	if got, want := p.Text(tx), "MTU 为 1234567，规划为 9000"; got != want {
		t.Errorf("Chinese = %q, want %q", got, want)
	}
	nested := health.Textf("%s: %s", health.Textf("port is down (see port_active)"), health.Textf("no RDMA device"))
	if got, want := p.Text(nested), "端口处于 down 状态（见 port_active）: 没有 RDMA 设备"; got != want {
		t.Errorf("nested = %q, want %q", got, want)
	}
	// Positional arguments reorder.
	pos := health.Textf("no %s for %s", "RDMA port", "ens1f0np0")
	if got, want := p.Text(pos), "ens1f0np0 没有RDMA port"; got != want {
		t.Errorf("positional = %q, want %q", got, want)
	}
}

// TestMissingFallsBackToEnglish: a format the catalogue does not have prints
// in English with its arguments, and so does a language without a catalogue.
func TestMissingFallsBackToEnglish(t *testing.T) {
	cat, err := build(map[language.Tag]map[string]string{Chinese: {"known %d": "已知 %d"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newWith(Chinese, cat)
	if got := p.Text(health.Textf("known %d", 1)); got != "已知 1" {
		t.Errorf("known = %q", got)
	}
	if got, want := p.Text(health.Textf("a check added later: %d of %s", 1234, "mlx5_0")), "a check added later: 1234 of mlx5_0"; got != want {
		t.Errorf("missing = %q, want %q", got, want)
	}
	if got, want := p.Sprintf("%d failed", 3), "3 failed"; got != want {
		t.Errorf("missing chrome = %q, want %q", got, want)
	}
	// A nested known Text is still translated inside an unknown one.
	if got, want := p.Text(health.Textf("new: %s", health.Textf("known %d", 2))), "new: 已知 2"; got != want {
		t.Errorf("nested in missing = %q, want %q", got, want)
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want language.Tag
	}{
		{map[string]string{}, English},
		{map[string]string{"LANG": "zh_CN.UTF-8"}, Chinese},
		{map[string]string{"LANG": "zh_CN.utf8"}, Chinese},
		{map[string]string{"LANG": "zh_SG.UTF-8"}, Chinese},
		{map[string]string{"LANG": "zh_TW.UTF-8"}, English}, // Traditional: no catalogue
		{map[string]string{"LANG": "en_US.UTF-8"}, English},
		{map[string]string{"LANG": "de_DE.UTF-8"}, English},
		{map[string]string{"LANG": "C.UTF-8"}, English},
		// POSIX: LC_ALL, then LC_MESSAGES, then LANG.
		{map[string]string{"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, English},
		{map[string]string{"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, Chinese},
		{map[string]string{"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, Chinese},
		{map[string]string{"LC_ALL": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, English},
		{map[string]string{"LC_MESSAGES": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}, English},
		{map[string]string{"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, Chinese}, // empty is unset
	} {
		if got := FromEnv(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %v, want %v", c.env, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]language.Tag{"en": English, "zh-CN": Chinese, "zh": Chinese, "zh_CN.UTF-8": Chinese, "zh-Hans": Chinese, "EN": English} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"fr", "klingon", "", "zh-TW"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}
