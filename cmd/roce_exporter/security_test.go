package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// selfSignedCert writes a CA-less self-signed certificate for 127.0.0.1.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "roce_exporter test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// tlsBasicAuthConfig writes an exporter-toolkit web config with TLS (a
// certificate for 127.0.0.1 that pool trusts) and the basic-auth user
// prometheus, password s3cret.
func tlsBasicAuthConfig(t *testing.T) (webConfig string, pool *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig = testenv.WriteFile(t, dir, "web.yml", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n", certFile, keyFile, hash))
	return webConfig, pool
}

// TestTLSAndBasicAuth runs the exporter with an exporter-toolkit web
// config: TLS with a real client, the right and a wrong password, and
// plain HTTP on the TLS port.
func TestTLSAndBasicAuth(t *testing.T) {
	webConfig, pool := tlsBasicAuthConfig(t)
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--web.config.file="+webConfig)...)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(user, pass string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+p.addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("TLS request: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("prometheus", "s3cret"); code != http.StatusOK || !strings.Contains(body, "roce_port_up") {
		t.Errorf("right password: HTTP %d", code)
	}
	if code, body := get("prometheus", "wrong"); code != http.StatusUnauthorized || strings.Contains(body, "roce_port_up") {
		t.Errorf("wrong password: HTTP %d, metrics leaked: %v", code, strings.Contains(body, "roce_port_up"))
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d", code)
	}
	// Plain HTTP on the TLS port is refused: no metrics come back.
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "roce_port_up") {
			t.Errorf("plain HTTP got HTTP %d with metrics", resp.StatusCode)
		}
	}
	// A client that does not trust the certificate cannot connect.
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://" + p.addr + "/metrics"); err == nil {
		t.Error("untrusted certificate accepted")
	}
}

func TestBadWebConfigIsRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	webConfig := testenv.WriteFile(t, dir, "web.yml", "tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n")
	cmd := exec.Command(binary, append(scenarioArgs("mlx5-8x400g-healthy"), "--web.config.file="+webConfig, "--web.listen-address="+testenv.FreeAddr(t))...)
	done := make(chan error, 1)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Start()
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("exporter started with an unusable TLS config:\n%s", out.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("exporter kept running with an unusable TLS config")
	}
}

// TestHungSysfsReadStillAnswers replaces a counter file with a FIFO: an
// open() that blocks like a firmware query that never returns. /metrics
// must answer within the collector timeout, report rdma success 0, and
// still carry the other devices and collectors.
func TestHungSysfsReadStillAnswers(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(fixtureDir, "mlx5-8x400g-healthy")
	if out, err := exec.Command("cp", "-a", src+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v %s", err, out)
	}
	// Resolve the class link so the FIFO replaces the real file.
	counter, _ := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/infiniband/mlx5_3/ports/1/hw_counters/out_of_buffer"))
	os.Remove(counter)
	if err := syscall.Mkfifo(counter, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Unblock the stuck open at the end so the process can exit.
	t.Cleanup(func() {
		if f, err := os.OpenFile(counter, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	p := startExporter(t, "--path.sysfs="+filepath.Join(dir, "sys"), "--path.dev="+filepath.Join(dir, "dev"),
		"--collector.ethtool.replay-dir="+filepath.Join(dir, "replay"), "--collector.timeout=1s", "--web.timeout=5s")
	for i := 0; i < 2; i++ {
		begin := time.Now()
		code, body := p.get(t, "/metrics")
		took := time.Since(begin)
		if code != http.StatusOK || took > 3*time.Second {
			t.Fatalf("scrape %d: HTTP %d after %v", i, code, took)
		}
		if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="rdma"`); v != "0" {
			t.Errorf("scrape %d: rdma success = %q with a stuck read", i, v)
		}
		if _, ok := metricValue(body, "roce_port_up", `device="mlx5_0"`); !ok {
			t.Errorf("scrape %d: the other devices are gone", i)
		}
		if _, ok := metricValue(body, "roce_port_up", `device="mlx5_3"`); ok {
			t.Errorf("scrape %d: the stuck device reported", i)
		}
		if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="pcie"`); v != "1" {
			t.Errorf("scrape %d: pcie success = %q", i, v)
		}
	}
}

// TestUnprivilegedRunSkipsUnreadableFiles runs the exporter as nobody on a
// fixture where some files are root-only: each becomes a counted, logged
// skip, and the exporter keeps serving.
func TestUnprivilegedRunSkipsUnreadableFiles(t *testing.T) {
	requireRoot(t)
	setpriv := testenv.LookPath(t, "util-linux", "setpriv")
	dir, err := os.MkdirTemp("", "roce-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the exporter is stopped
	os.Chmod(dir, 0o755)
	if out, err := exec.Command("cp", "-a", filepath.Join(fixtureDir, "mlx5-8x400g-healthy")+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v %s", err, out)
	}
	exec.Command("chmod", "-R", "a+rX", dir).Run()
	secret, _ := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"))
	os.Chmod(secret, 0o400)
	hidden, _ := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/infiniband/mlx5_1/ports/1/counters"))
	os.Chmod(hidden, 0o700)
	bin := filepath.Join(dir, "roce_exporter")
	if out, err := exec.Command("cp", binary, bin).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.Chmod(bin, 0o755)

	addr := testenv.FreeAddr(t)
	p := runExporter(t, addr, exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"--path.sysfs="+filepath.Join(dir, "sys"), "--path.dev="+filepath.Join(dir, "dev"),
		"--collector.ethtool.replay-dir="+filepath.Join(dir, "replay"), "--web.listen-address="+addr))
	testenv.WaitListening(t, addr, 10*time.Second)
	_, body := p.get(t, "/metrics")
	if v, _ := metricValue(body, "roce_scrape_read_errors_total", `collector="rdma"`); v != "2" {
		t.Errorf("read errors = %q, want 2 (one file, one directory)", v)
	}
	if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="rdma"`); v != "1" {
		t.Errorf("rdma success = %q", v)
	}
	if _, ok := metricValue(body, "roce_hw_np_cnp_sent_total", `device="mlx5_0"`); ok {
		t.Error("an unreadable counter was exported")
	}
	if !strings.Contains(p.logs.String(), "permission denied") {
		t.Errorf("permission errors not logged:\n%s", p.logs)
	}
	if p.cmd.ProcessState != nil {
		t.Fatal("exporter exited")
	}
}

// TestRespondersOnlyWithProbesEnabled: without probes.enabled no probe
// process is ever started, and no HTTP request starts one either.
func TestRespondersOnlyWithProbesEnabled(t *testing.T) {
	dir := t.TempDir()
	plan := probePlan(t, dir, fmt.Sprintf(`  ib_write_bw:
    command: %s
`, absPath(t, "../../probes/testdata/standin/perftest")))
	// The same plan with the master switch off.
	b, _ := os.ReadFile(plan)
	os.WriteFile(plan, bytes.Replace(b, []byte("enabled: true"), []byte("enabled: false"), 1), 0o644)
	// The stand-in logs every call to $STANDIN_DIR/calls; the exporter
	// passes its environment on to the probe processes.
	t.Setenv("STANDIN_DIR", dir)
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+plan, "--node.name=node01")...)
	for _, path := range []string{"/", "/metrics", "/?target=192.168.100.12&module=ib_write_bw", "/probe?target=x", "/metrics?collect[]=probe"} {
		p.get(t, path)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "calls")); err == nil {
		calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
		t.Errorf("a probe process ran with probes disabled:\n%s", calls)
	}
	_, body := p.get(t, "/metrics")
	// Probes off is nothing to do, not a failing collector.
	if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="probe"`); v != "1" {
		t.Errorf("probe collector success = %q with probes off", v)
	}
	if _, ok := metricValue(body, "roce_probe_success"); ok {
		t.Error("probe results exported with probes off")
	}
}
