package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// screenshotEnv names a path the Chromium test copies its screenshot to:
// `ROCE_PAGE_SCREENSHOT=$PWD/docs/node-page.png go test -run
// TestNodePageInChromium ./cmd/roce_exporter` refreshes the README's image.
const screenshotEnv = "ROCE_PAGE_SCREENSHOT"

// chromium runs headless Chromium (Debian's chromium) on url with args and
// returns its standard output.
func chromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// --no-sandbox: the sandbox refuses to run as root, which CI is.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,2200"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// TestNodePageInChromium renders the page of the running exporter on the
// degraded fixture in a real browser: the DOM Chromium builds holds every
// failure, and the screenshot is an image with content, not a blank page.
func TestNodePageInChromium(t *testing.T) {
	bin := testenv.LookPath(t, "chromium", "chromium", "chromium-browser")
	p := startExporter(t, append([]string{"--node.name=gpu-node-07"}, scenarioArgs("mlx5-degraded")...)...)
	url := "http://" + p.addr + "/"

	dom := string(chromium(t, bin, url, "--dump-dom"))
	for _, id := range []string{"port_active", "global_pause_off_with_pfc", "ecn_enabled", "pcie_bandwidth_sufficient", "pcie_link_not_degraded"} {
		if !strings.Contains(dom, `<tr class="fail"><td>FAIL</td><td><code>`+id+`</code>`) {
			t.Errorf("the rendered DOM lacks the failure %s", id)
		}
	}
	if !regexp.MustCompile(`id="verdict">FAILING: [1-9][0-9]* failed`).MatchString(dom) {
		t.Errorf("the rendered DOM lacks the verdict")
	}

	shot := filepath.Join(t.TempDir(), "page.png")
	chromium(t, bin, url, "--screenshot="+shot)
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	// A blank or error page is nearly one colour; the node page has text,
	// tables and the red verdict.
	if ink, red := inkAndRed(img); ink < 0.01 || red == 0 {
		t.Errorf("screenshot looks empty: %.2f%% of pixels not white, %d red pixels", 100*ink, red)
	}
	if dst := os.Getenv(screenshotEnv); dst != "" {
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// inkAndRed returns the share of pixels that are not near-white and the
// number of strongly red ones (the FAIL marks and verdict).
func inkAndRed(img image.Image) (float64, int) {
	b := img.Bounds()
	var ink, red int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 235 || g < 235 || bl < 235 {
				ink++
			}
			if r > 120 && g < 60 && bl < 60 {
				red++
			}
		}
	}
	return float64(ink) / float64(b.Dx()*b.Dy()), red
}
