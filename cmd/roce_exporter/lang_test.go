package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"html"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/i18n"
)

// runDoctorEnv runs the one-sample doctor with env as its whole locale
// (LANG, LC_ALL and LC_MESSAGES of the test's own environment removed).
func runDoctorEnv(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never", "--interval=0"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LANG=") && !strings.HasPrefix(kv, "LC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// One row per finding, so that rows() reads them; the wrapped layout
	// in Chinese is TestDoctorWrapsInChinese's.
	cmd.Env = append(cmd.Env, "COLUMNS=100000")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func degradedDoctorArgs() []string {
	return append(scenarioArgs("mlx5-degraded"), "--config.file="+healthyPlan, "--node.name=node01")
}

var (
	han      = regexp.MustCompile(`\p{Han}`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	verb     = regexp.MustCompile(`%(\[\d+\])?[-+# 0-9.]*(\[\d+\])?[a-zA-Z%]`)
)

// englishPieces are the English runs of words of every translated format
// (split at its verbs, commands left out): none of them may show in the
// Chinese doctor.
func englishPieces() []string {
	var out []string
	for en, zh := range i18n.Translations(i18n.Chinese) {
		for _, piece := range verb.Split(codeSpan.ReplaceAllString(en, "\x00"), -1) {
			for _, p := range strings.Split(piece, "\x00") {
				p = strings.TrimSpace(p)
				// A run the translation keeps is a command (ip link set dev).
				if regexp.MustCompile(`^[a-z]{2,}( [a-z()',]{2,}){2,}`).MatchString(p) && !strings.Contains(zh, p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// TestDoctorInChineseOnTheDegradedNode: LANG=zh_CN.UTF-8 turns the whole
// doctor to Chinese on the degraded sample node: every failure and warning
// with its fix, the passes, the skips, the headers and the summary, with
// no English sentence of a translated format left; the verdict and exit
// code are the English run's.
func TestDoctorInChineseOnTheDegradedNode(t *testing.T) {
	en, enCode := runDoctorEnv(t, nil, degradedDoctorArgs()...)
	zh, zhCode := runDoctorEnv(t, []string{"LANG=zh_CN.UTF-8"}, degradedDoctorArgs()...)
	if enCode != 1 || zhCode != enCode {
		t.Fatalf("exit codes: English %d, Chinese %d; want 1 for both", enCode, zhCode)
	}
	if !strings.HasPrefix(zh, "roce_exporter doctor — 示例节点 mlx5-degraded（不是本机），按节点 node01 判断，集群规划 ") || !strings.Contains(zh, "项失败") {
		t.Errorf("header or summary not in Chinese:\n%s", zh)
	}
	// The same findings: one row per English row, with the same check and
	// subject, and the status words in Chinese.
	enRows, zhRows := rows(en), rows(zh)
	if len(enRows) != len(zhRows) || len(zhRows) < 40 {
		t.Fatalf("%d English rows, %d Chinese rows", len(enRows), len(zhRows))
	}
	words := map[string]string{"FAIL": "失败", "WARN": "警告", "ok": "正常", "skipped": "跳过"}
	for i, z := range zhRows {
		e := enRows[i]
		if z.status != words[e.status] || z.id != e.id && !strings.HasSuffix(z.id, "项检查") {
			t.Errorf("row %d: %q %q, English %q %q", i, z.status, z.id, e.status, e.id)
		}
		// Folded passes list subjects; every other message is a sentence,
		// in Chinese.
		if !strings.HasPrefix(z.subject, "共 ") && !han.MatchString(z.msg) {
			t.Errorf("row %d (%s %s): no Chinese in %q", i, z.id, z.subject, z.msg)
		}
	}
	fixes := 0
	for _, l := range strings.Split(zh, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "fix:") || strings.HasPrefix(l, "at:") {
			t.Errorf("English label: %q", l)
		}
		if strings.HasPrefix(l, "修复：") {
			fixes++
			if !han.MatchString(codeSpan.ReplaceAllString(strings.TrimPrefix(l, "修复："), "")) {
				t.Errorf("fix not in Chinese: %q", l)
			}
		}
	}
	if want := strings.Count(en, "fix: "); fixes != want || fixes < 15 {
		t.Errorf("%d fixes in Chinese, %d in English", fixes, want)
	}
	for _, piece := range englishPieces() {
		if strings.Contains(codeSpan.ReplaceAllString(zh, ""), piece) {
			t.Errorf("English left in the Chinese doctor: %q", piece)
		}
	}
	// The commands and values stay as they are.
	for _, keep := range []string{"ip link set dev ens4f0np0 mtu 9000", "`mlnx_qos -i ens1f0np0 --trust dscp`", "NCCL_IB_GID_INDEX=3", "28.39.1002"} {
		if !strings.Contains(zh, keep) {
			t.Errorf("the Chinese doctor lost %q", keep)
		}
	}
}

type row struct{ status, id, subject, msg string }

// rows reads the doctor's finding rows: status, check, subject, message,
// split at the two-space column gaps.
func rows(out string) []row {
	var rs []row
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, " ") {
			continue
		}
		f := regexp.MustCompile(`\s{2,}`).Split(l, 4)
		if len(f) < 4 {
			continue
		}
		switch f[0] {
		case "FAIL", "WARN", "ok", "skipped", "失败", "警告", "正常", "跳过":
			rs = append(rs, row{f[0], f[1], f[2], f[3]})
		}
	}
	return rs
}

// TestDoctorLanguageChoice: POSIX precedence (LC_ALL, then LC_MESSAGES,
// then LANG), --lang over the locale, English by default, and the JSON
// always English.
func TestDoctorLanguageChoice(t *testing.T) {
	english, _ := runDoctorEnv(t, nil, degradedDoctorArgs()...)
	if !strings.HasPrefix(english, "roce_exporter doctor — sample node mlx5-degraded (not this machine) as node node01") || han.MatchString(english) {
		t.Fatalf("the default is not English:\n%.300s", english)
	}
	for _, c := range []struct {
		name    string
		env     []string
		args    []string
		chinese bool
	}{
		{"LANG", []string{"LANG=zh_CN.UTF-8"}, nil, true},
		{"LC_ALL over LANG", []string{"LC_ALL=en_US.UTF-8", "LANG=zh_CN.UTF-8"}, nil, false},
		{"LC_ALL=C over LANG", []string{"LC_ALL=C", "LANG=zh_CN.UTF-8"}, nil, false},
		{"LC_ALL alone", []string{"LC_ALL=zh_CN.UTF-8", "LANG=en_US.UTF-8"}, nil, true},
		{"LC_MESSAGES over LANG", []string{"LC_MESSAGES=zh_CN.UTF-8", "LANG=en_US.UTF-8"}, nil, true},
		{"--lang=en over the locale", []string{"LANG=zh_CN.UTF-8"}, []string{"--lang=en"}, false},
		{"--lang=zh-CN over the locale", []string{"LC_ALL=C"}, []string{"--lang=zh-CN"}, true},
	} {
		out, _ := runDoctorEnv(t, c.env, append(degradedDoctorArgs(), c.args...)...)
		if got := strings.HasPrefix(out, "roce_exporter doctor — 示例节点"); got != c.chinese {
			t.Errorf("%s: Chinese %v, want %v:\n%.200s", c.name, got, c.chinese, out)
		}
		if !c.chinese && out != english {
			t.Errorf("%s: the English differs from the default run", c.name)
		}
	}
	// The JSON is for programs: English, whatever the language.
	enJSON, _ := runDoctorEnv(t, nil, append(degradedDoctorArgs(), "--output=json")...)
	zhJSON, _ := runDoctorEnv(t, []string{"LANG=zh_CN.UTF-8"}, append(degradedDoctorArgs(), "--output=json", "--lang=zh-CN")...)
	var a, b doctorReport
	if err := json.Unmarshal([]byte(enJSON), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(zhJSON), &b); err != nil {
		t.Fatal(err)
	}
	if han.MatchString(zhJSON) || len(a.Checks) != len(b.Checks) || a.Checks[0].Message != b.Checks[0].Message {
		t.Error("the JSON is not the same English with LANG=zh_CN.UTF-8 and --lang=zh-CN")
	}
	if _, code := runDoctorEnv(t, nil, append(degradedDoctorArgs(), "--lang=fr")...); code != 2 {
		t.Errorf("--lang=fr: exit %d, want 2 (usage error)", code)
	}
}

// TestNodePageInChinese: the page of the degraded node in Chinese, every
// finding's message and fix, the verdict and the headings translated, the
// lang attribute set; and English stays the default.
func TestNodePageInChinese(t *testing.T) {
	page := degradedPageIn(t, i18n.New(i18n.Chinese), nil)
	for _, want := range []string{`<html lang="zh-CN">`, "异常：", "诊断结果", "采集器", "发现的问题及修复方法", "<strong>修复：</strong>", "项通过", "项跳过",
		"802.3x 全局流控（global pause）已开启", "MTU 1500 与其他 7 个计算网口的 9000 不同"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Chinese page lacks %q", want)
		}
	}
	for _, m := range rowStatus.FindAllStringSubmatch(page, -1) {
		if !han.MatchString(m[2]) {
			t.Errorf("status word %q not in Chinese", m[2])
		}
	}
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(codeSpan.ReplaceAllString(page, ""), "\n")
	// The collectors' descriptions (collector.Help, the "reads" column)
	// are the metrics' English help; they are not translated.
	for _, n := range collector.Names() {
		text = strings.ReplaceAll(text, html.EscapeString(collector.Help(n)), "")
	}
	for _, piece := range englishPieces() {
		if i := strings.Index(text, piece); i >= 0 {
			t.Errorf("English left on the Chinese page: %q in %q", piece, text[max(0, i-200):min(len(text), i+100)])
		}
	}
	if en := degradedPage(t, nil); !strings.Contains(en, `<html lang="en">`) || han.MatchString(regexp.MustCompile(`(?s)<style>.*</style>`).ReplaceAllString(en, "")) {
		t.Error("the default page is not English")
	}
}

// TestReadmeZhDoctorExampleIsRealOutput: README.zh-CN.md's doctor example
// is the real Chinese output of its command, line by line in order (a line
// ending in " …" was shortened and matches as a prefix; "…" stands for
// lines left out).
func TestReadmeZhDoctorExampleIsRealOutput(t *testing.T) {
	raw, err := os.ReadFile("../../README.zh-CN.md")
	if err != nil {
		t.Fatal(err)
	}
	var args, excerpt []string
	for _, block := range strings.Split(string(raw), "```console\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
		if cmdline, ok := strings.CutPrefix(lines[0], "$ LANG=zh_CN.UTF-8 ./roce_exporter doctor "); ok {
			args, excerpt = strings.Fields(cmdline), lines[1:]
			break
		}
	}
	if args == nil {
		t.Fatal("README.zh-CN.md has no `$ LANG=zh_CN.UTF-8 ./roce_exporter doctor …` example")
	}
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never"}, args...)...)
	cmd.Dir = "../.."
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LANG=") && !strings.HasPrefix(kv, "LC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LANG=zh_CN.UTF-8")
	out, err := cmd.Output()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatal(err)
	}
	real := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	next := 0
	for _, want := range excerpt {
		if want == "…" {
			continue
		}
		prefix, shortened := strings.CutSuffix(want, " …")
		found := false
		for ; next < len(real); next++ {
			if got := real[next]; got == want || (shortened && strings.HasPrefix(got, prefix)) {
				found, next = true, next+1
				break
			}
		}
		if !found {
			t.Fatalf("README.zh-CN.md line not in the real output (or out of order):\n  %s\nreal output:\n%s", want, out)
		}
	}
}

// TestChromeTranslated: every string the doctor and the page print through
// the printer (p.Sprintf, p.Word, the template's .T) has a Chinese
// translation, so a label added in English only fails here.
func TestChromeTranslated(t *testing.T) {
	zh := i18n.Translations(i18n.Chinese)
	calls := regexp.MustCompile(`p\.(?:Sprintf|Word)\(("(?:[^"\\]|\\.)*")`)
	tmpl := regexp.MustCompile(`\$?\.T ("(?:[^"\\]|\\.)*")`)
	n := 0
	for _, file := range []string{"doctor.go", "doctor_text.go", "doctor_cabling.go", "doctor_incast.go", "page.go", "page.html"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{calls, tmpl} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				s, err := strconv.Unquote(m[1])
				if err != nil {
					t.Fatalf("%s: %s: %v", file, m[1], err)
				}
				n++
				if _, ok := zh[s]; !ok && regexp.MustCompile(`[A-Za-z]{2,}`).MatchString(verb.ReplaceAllString(s, "")) {
					t.Errorf("%s: no Chinese for %q", file, s)
				}
			}
		}
	}
	// Every msg* constant of messages.go: the doctor's, page's and plan
	// init's own words, read from the source so that a new one is held too.
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "messages.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := 0
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, "msg") || !ok {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", name.Name, err)
				}
				consts++
				if _, ok := zh[s]; !ok && regexp.MustCompile(`[A-Za-z]{2,}`).MatchString(verb.ReplaceAllString(s, "")) {
					t.Errorf("messages.go: no Chinese for %s = %q", name.Name, s)
				}
			}
		}
	}
	if consts < 40 {
		t.Errorf("only %d msg constants found in messages.go: the scan is broken", consts)
	}
	if n < 60 {
		t.Errorf("only %d strings found: the scan is broken", n)
	}
}

// TestNotRDMANodeInChinese: the headline of a node with nothing to check is
// its reason in Chinese, and the folded skips point to it.
func TestNotRDMANodeInChinese(t *testing.T) {
	out, code := runDoctorEnv(t, []string{"LANG=zh_CN.UTF-8"}, scenarioArgs("cpu-node-no-rdma")...)
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	for _, want := range []string{"不是 RDMA 节点：没有 RDMA 设备，PCI 总线上也没有支持 RDMA 的网卡", "原因见上："} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no RDMA device") {
		t.Errorf("the reason is left in English:\n%s", out)
	}
}
