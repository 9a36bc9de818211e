package collector

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// TestTextIsWhatClientGolangWouldWrite parses the exporter's own text
// output with the reference parser and re-encodes it with the reference
// encoder: the bytes must not change (same sorting, escaping, numbers).
func TestTextIsWhatClientGolangWouldWrite(t *testing.T) {
	for _, scenario := range sysfixture.ScenarioNames() {
		t.Run(scenario, func(t *testing.T) {
			cfg := fixtureConfig(scenario, "rdma", "netdev", "pcie", "ethtool", "dcb")
			if sc := sysfixture.Scenarios[scenario](); sc.Replay != nil {
				cfg.ro.ReplayDir = filepath.Join(fixtures, scenario, "replay")
			}
			e, _ := newTestExporter(t, cfg)
			text := e.Text()
			assertReencodes(t, text)
		})
	}
}

func assertReencodes(t *testing.T, text []byte) {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("reference parser rejects the output: %v", err)
	}
	var names []string
	for n := range families {
		names = append(names, n)
	}
	var out bytes.Buffer
	for _, n := range sortedStrings(names) {
		if _, err := expfmt.MetricFamilyToText(&out, families[n]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out.Bytes(), text) {
		t.Errorf("re-encoded output differs:\n%s", diffFirst(string(text), out.String()))
	}
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func diffFirst(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "ours:      " + al[i] + "\nreference: " + bl[i]
		}
	}
	return "lengths differ"
}

func TestTextEscapesLabelValuesAndHelp(t *testing.T) {
	d := newGaugeDesc("roce_test_escape", "help with \\ backslash\nand newline", "a", "b")
	var s Sink
	s.emit(d, 1.5, `quote " and \ backslash`, "line\nbreak")
	s.emit(d, 2, "x", "y")
	text, _ := s.render(nil, &sortCache{})
	assertReencodes(t, text)
	want := `roce_test_escape{a="quote \" and \\ backslash",b="line\nbreak"} 1.5`
	if !strings.Contains(string(text), want) {
		t.Errorf("got\n%s\nwant a line %s", text, want)
	}
}

func TestRenderReusesItsSortOnlyWhenTheSamplesAreTheSame(t *testing.T) {
	d := newGaugeDesc("roce_test_order", "h", "device")
	var s Sink
	var cache sortCache
	s.emit(d, 1, "mlx5_10")
	s.emit(d, 2, "mlx5_2")
	first := rendered(&s, &cache)
	s.reset()
	s.emit(d, 3, "mlx5_10")
	s.emit(d, 4, "mlx5_2")
	second := rendered(&s, &cache)
	if !strings.Contains(second, `roce_test_order{device="mlx5_10"} 3`+"\n"+`roce_test_order{device="mlx5_2"} 4`) {
		t.Errorf("cached order gave:\n%s", second)
	}
	s.reset()
	s.emit(d, 5, "mlx5_3")
	s.emit(d, 6, "mlx5_1")
	third := rendered(&s, &cache)
	if !strings.Contains(third, `device="mlx5_1"} 6`+"\n"+`roce_test_order{device="mlx5_3"} 5`) {
		t.Errorf("changed samples were not re-sorted:\n%s", third)
	}
	_ = first
}

func TestScanMatchesContainsAny(t *testing.T) {
	inputs := []string{"", "mlx5_0", "ens1f0np0", `a\b`, "a\nb", `a"b`, "ünï\x00code", "\\", "\n", `"`}
	for c := 0; c < 256; c++ {
		inputs = append(inputs, "x"+string(rune(c))+"y", string([]byte{byte(c)}))
	}
	for _, s := range inputs {
		plain, ascii := scan(s)
		if want := !strings.ContainsAny(s, "\\\n\""); plain != want {
			t.Errorf("scan(%q) plain = %v, want %v", s, plain, want)
		}
		if want := !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }); ascii != want && utf8.ValidString(s) {
			t.Errorf("scan(%q) ascii = %v, want %v", s, ascii, want)
		}
	}
}

func rendered(s *Sink, cache *sortCache) string {
	text, _ := s.render(nil, cache)
	return string(text)
}

func TestLabelValuesAreValidUTF8(t *testing.T) {
	d := newGaugeDesc("roce_test_utf8", "h", "interface")
	var s Sink
	s.emit(d, 1, "v\xff\xfe")
	s.emit(d, 2, "ünï")
	text := rendered(&s, &sortCache{})
	if !utf8.ValidString(text) {
		t.Fatalf("invalid UTF-8 in %q", text)
	}
	if !strings.Contains(text, `roce_test_utf8{interface="v\\xff\\xfe"} 1`) || !strings.Contains(text, `interface="ünï"} 2`) {
		t.Errorf("got\n%s", text)
	}
	assertReencodes(t, []byte(text))
}

// An interface named with the bytes 0xff 0xfe and one named with the text
// `\xff\xfe` (both legal on Linux) are two interfaces: two series, not one
// series twice, which the encoder would refuse and the scrape lose.
func TestLabelValuesStayDistinct(t *testing.T) {
	d := newGaugeDesc("roce_test_utf8", "h", "interface")
	var s Sink
	s.emit(d, 1, "v\xff\xfe")
	s.emit(d, 2, `v\xff\xfe`)
	s.emit(d, 3, `a\b`)
	text := rendered(&s, &sortCache{})
	for _, want := range []string{`roce_test_utf8{interface="v\\xff\\xfe"} 1`, `roce_test_utf8{interface="v\\\\xff\\\\xfe"} 2`, `roce_test_utf8{interface="a\\b"} 3`} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
	assertReencodes(t, []byte(text))
}
