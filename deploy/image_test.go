package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// imageConfig is what the test reads of `podman image inspect` (or docker's): the
// settings the image runs with. Podman keeps the health check beside Config, docker
// inside it.
type imageConfig struct {
	Config struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Volumes      map[string]struct{} `json:"Volumes"`
		StopSignal   string              `json:"StopSignal"`
		Healthcheck  *healthcheck        `json:"Healthcheck"`
	} `json:"Config"`
	HealthCheck *healthcheck `json:"HealthCheck"`
}

type healthcheck struct {
	Test []string `json:"Test"`
}

// imageBuilder returns podman, or docker when podman is missing and docker's daemon
// answers; the test skips on a host with neither.
func imageBuilder(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("podman"); err == nil {
		return p
	}
	if d, err := exec.LookPath("docker"); err == nil {
		if exec.Command(d, "info").Run() == nil {
			return d
		}
		t.Skip("docker is installed but its daemon does not answer, and podman is not installed (apt-get install podman): the image is not built")
	}
	t.Skip("neither podman nor docker is installed (apt-get install podman): the image is not built")
	return ""
}

// TestImage builds the container image with `make image`, as docs/deploying.md says,
// and checks what it holds without running it (containers cannot run on every host
// that builds them): a non-root user that /etc/passwd names and that owns the data
// volume, the HTTP and members' ports, the health check and the entry point; then it
// takes intentd out of the image's layers, checks that it is static, runs its
// --version, and starts it with the image's environment to run the image's health
// check against it. Skipped with -short: a first build compiles intentd, minutes on a
// cold cache (about 20 s on a warm one).
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the image build compiles intentd (about 20 s with a warm build cache, minutes without)")
	}
	builder := imageBuilder(t)
	tag := fmt.Sprintf("localhost/intentd:test-%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "image", "IMAGE="+tag, "IMAGE_BUILDER="+builder)
	cmd.Dir = ".."
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image took %s", time.Since(start).Round(time.Second))
	t.Cleanup(func() { exec.Command(builder, "rmi", "-f", tag).Run() })

	out, err := exec.Command(builder, "image", "inspect", tag).Output()
	if err != nil {
		t.Fatalf("%s image inspect: %v", builder, err)
	}
	var inspected []imageConfig
	if err := json.Unmarshal(out, &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("image inspect: %v, %d images; want one", err, len(inspected))
	}
	cfg := inspected[0].Config
	hc := inspected[0].HealthCheck
	if cfg.Healthcheck != nil {
		hc = cfg.Healthcheck
	}
	env := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}

	uid, _, _ := strings.Cut(cfg.User, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("the image runs as user %q; want a user other than root", cfg.User)
	}
	_, port, err := net.SplitHostPort(env["INTENTD_LISTEN"])
	if err != nil {
		t.Errorf("INTENTD_LISTEN=%q: %v; want the image to listen beyond loopback on a fixed port", env["INTENTD_LISTEN"], err)
	}
	for _, p := range []string{port + "/tcp", "7300/tcp"} {
		if _, ok := cfg.ExposedPorts[p]; !ok {
			t.Errorf("the image exposes %v; want %s (the HTTP API of INTENTD_LISTEN, and the members' port)", keys(cfg.ExposedPorts), p)
		}
	}
	if _, ok := cfg.Volumes[env["INTENTD_DATA"]]; !ok || env["INTENTD_DATA"] == "" {
		t.Errorf("volumes %v, INTENTD_DATA=%q: want the data folder a volume", keys(cfg.Volumes), env["INTENTD_DATA"])
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/intentd"}) || len(cfg.Cmd) != 0 {
		t.Errorf("entry point %q, command %q: want /intentd, and the arguments given to the container as its flags", cfg.Entrypoint, cfg.Cmd)
	}
	if hc == nil || !slices.Equal(hc.Test, []string{"CMD", "/intentd", "--healthcheck"}) {
		t.Errorf("health check %+v: want CMD /intentd --healthcheck (the image has no shell)", hc)
	}

	files := imageFiles(t, builder, tag)
	if h, ok := files.headers["data/"]; !ok || fmt.Sprint(h.Uid) != uid {
		t.Errorf("the data folder in the image: %+v; want it owned by the image's user %s", h, uid)
	}
	if !bytes.Contains(files.content["etc/passwd"], []byte(":x:"+uid+":")) {
		t.Errorf("/etc/passwd does not name user %s:\n%s", uid, files.content["etc/passwd"])
	}
	if len(files.content["etc/ssl/certs/ca-certificates.crt"]) == 0 {
		t.Error("the image holds no CA certificates: the web extractor and NATS over TLS could verify no server")
	}
	for _, shell := range []string{"bin/sh", "bin/busybox"} {
		if _, ok := files.headers[shell]; ok {
			t.Errorf("the image holds %s; want no shell", shell)
		}
	}
	bin := filepath.Join(t.TempDir(), "intentd")
	if err := os.WriteFile(bin, files.content["intentd"], 0o755); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, bin)
	version, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(version), "intentd ") {
		t.Fatalf("intentd --version of the image's binary: %v, %q", err, version)
	}
	t.Logf("the image's intentd: %s, %.1f MB", strings.TrimSpace(string(version)), float64(len(files.content["intentd"]))/1e6)
	checkImageHealth(t, bin, cfg.Env, hc.Test[1:])
}

// imageLayers is the files of an image, its layers applied in order: each file's
// header, and the content of the regular files.
type imageLayers struct {
	headers map[string]*tar.Header
	content map[string][]byte
}

// imageFiles saves the image as a docker archive and reads its layers.
func imageFiles(t *testing.T, builder, tag string) imageLayers {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	args := []string{"save", "-o", archive, tag}
	if filepath.Base(builder) == "podman" {
		args = []string{"save", "--format", "docker-archive", "-o", archive, tag}
	}
	if out, err := exec.Command(builder, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s save: %v\n%s", builder, err, out)
	}
	outer := readTar(t, archive)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(outer.content["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("the archive's manifest.json: %v, %d images", err, len(manifest))
	}
	img := imageLayers{headers: map[string]*tar.Header{}, content: map[string][]byte{}}
	for _, layer := range manifest[0].Layers {
		blob, ok := outer.content[layer]
		if !ok {
			t.Fatalf("the archive lacks the layer %s", layer)
		}
		applyLayer(t, &img, blob)
	}
	return img
}

// readTar reads every entry of a tar file.
func readTar(t *testing.T, path string) imageLayers {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img := imageLayers{headers: map[string]*tar.Header{}, content: map[string][]byte{}}
	applyLayer(t, &img, b)
	return img
}

// applyLayer adds the entries of one layer (a tar, gzipped or not) over img, with
// whiteouts (.wh.NAME) removing what a lower layer had.
func applyLayer(t *testing.T, img *imageLayers, blob []byte) {
	t.Helper()
	var r io.Reader = bytes.NewReader(blob)
	if len(blob) > 2 && blob[0] == 0x1f && blob[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	tr := tar.NewReader(bufio.NewReader(r))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("reading a layer: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if dir, base := filepath.Split(name); strings.HasPrefix(base, ".wh.") {
			gone := dir + strings.TrimPrefix(base, ".wh.")
			delete(img.headers, gone)
			delete(img.content, gone)
			continue
		}
		img.headers[name] = h
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			img.content[name] = b
		}
	}
}

// checkStatic fails unless the binary at path asks for no dynamic loader: the image
// has no libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the image's intentd is not an ELF binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the image's intentd is dynamically linked; the image has no libc: build it with CGO_ENABLED=0")
		}
	}
}

// checkImageHealth starts the image's intentd with the image's environment, on a port
// and a folder of the test's own, and runs the image's health check against it with
// the same environment, as the container runtime would: it must pass.
func checkImageHealth(t *testing.T, bin string, imageEnv, check []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := []string{}
	for _, kv := range imageEnv {
		if !strings.HasPrefix(kv, "INTENTD_LISTEN=") && !strings.HasPrefix(kv, "INTENTD_DATA=") {
			env = append(env, kv)
		}
	}
	env = append(env, "INTENTD_LISTEN="+addr, "INTENTD_DATA="+t.TempDir())
	srv := exec.Command(bin)
	srv.Env = env
	var logs bytes.Buffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}()
	probe := func() ([]byte, error) {
		c := exec.Command(bin, check[1:]...) // check[0] is the image's path of intentd
		c.Env = env
		return c.CombinedOutput()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := probe()
		if err == nil {
			t.Logf("the image's health check: %s", bytes.TrimSpace(out))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the image's health check %q against intentd started with the image's environment: %v\n%s\nintentd's logs:\n%s", check, err, out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	if out, err := probe(); err == nil {
		t.Errorf("the health check passed with intentd stopped: %s", out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("the health check with intentd stopped: %v; want exit status 1 (unhealthy)", err)
	}
}

// keys returns the keys of m, sorted.
func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
