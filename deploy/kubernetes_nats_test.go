package deploy

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/cluster/clustertls"
	natsserver "github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// checkNATS reads the NATS servers' configuration with nats-server's own parser, as
// the first pod would (its variables from the environment, its files where the pod
// mounts them, a certificate made for it), and checks it against the StatefulSet:
// JetStream syncing every write, a token for clients over TLS, routes to every server
// by the names the Service gives them, in mutual TLS, and the ports the pods publish.
func checkNATS(t *testing.T, m *manifests, s *appsv1.StatefulSet, secrets map[string][]string) {
	spec := s.Spec.Template.Spec
	c := container(t, spec, "nats")
	if len(c.Args) != 2 || c.Args[0] != "--config" {
		t.Fatalf("nats args %q; want --config FILE", c.Args)
	}
	vol, key := mountOf(spec, c, c.Args[1])
	if vol == nil || vol.ConfigMap == nil || m.configMaps[vol.ConfigMap.Name] == nil {
		t.Fatalf("--config %s is in no ConfigMap of these manifests", c.Args[1])
	}
	conf, ok := m.configMaps[vol.ConfigMap.Name].Data[key]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", vol.ConfigMap.Name, key)
	}

	var hosts []string
	for i := 0; i < int(*s.Spec.Replicas); i++ {
		hosts = append(hosts, fmt.Sprintf("%s-%d.%s", s.Name, i, s.Spec.ServiceName))
	}
	confFile := podFiles(t, spec, c, conf, hosts, secrets)
	doc := strings.ReplaceAll(readFile(t, "../docs/deploying.md"), "\\\n", " ")
	vars := podVars(c, s, 0, m.namespace)
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			vars[e.Name] = "secret-of-" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	for name, v := range vars {
		t.Setenv(name, v)
	}
	opts, err := natsserver.ProcessConfigFile(confFile)
	if err != nil {
		t.Fatalf("nats-server reads the configuration: %v\n%s", err, conf)
	}

	pod := &s.Spec.Template
	port := func(name string) int { n, _ := containerPort(pod, name); return int(n) }
	switch {
	case opts.ServerName != vars["POD_NAME"]:
		t.Errorf("server_name %q; want the pod's name, %s, stable across restarts as JetStream needs", opts.ServerName, vars["POD_NAME"])
	case !opts.JetStream || !opts.SyncAlways:
		t.Errorf("jetstream %v, sync_interval always %v: want JetStream, every acknowledged write on disk", opts.JetStream, opts.SyncAlways)
	case opts.Authorization == "" || opts.Authorization != vars["NATS_TOKEN"]:
		t.Errorf("client authorization %q; want the token of the Secret, from NATS_TOKEN", opts.Authorization)
	case opts.TLSConfig == nil:
		t.Error("clients connect without TLS; intentd's --store says tls://")
	case opts.Port != port("client") || opts.Cluster.Port != port("cluster") || opts.HTTPPort != port("monitor"):
		t.Errorf("ports client %d, cluster %d, monitor %d; want the container's %d, %d, %d", opts.Port, opts.Cluster.Port, opts.HTTPPort, port("client"), port("cluster"), port("monitor"))
	case opts.Cluster.TLSConfig == nil || opts.Cluster.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert:
		t.Error("the routes do not require a certificate of the servers' CA: any pod that reaches the cluster port joins as a server")
	}
	var routes []string
	for _, r := range opts.Routes {
		routes = append(routes, r.Host)
	}
	if want := fmt.Sprintf("%s:%d", strings.Join(hosts, fmt.Sprintf(":%d,", port("cluster"))), port("cluster")); strings.Join(routes, ",") != want {
		t.Errorf("routes %v; want %s", routes, want)
	}
	for _, h := range hosts {
		if !regexp.MustCompile(`intentctl certs -o nats-certs nats=\S*\b` + regexp.QuoteMeta(h) + `\b`).MatchString(doc) {
			t.Errorf("docs/deploying.md's intentctl certs for NATS does not name %s, a host the routes and intentd dial", h)
		}
	}
}

// podFiles writes the NATS configuration conf of container c under a folder of the
// test's own, with the files it names where the pod mounts them (a certificate made
// for hosts, its key and its CA), having checked that each is a key docs/deploying.md
// puts in a Secret the pod mounts; it returns the configuration's path.
func podFiles(t *testing.T, spec corev1.PodSpec, c corev1.Container, conf string, hosts []string, secrets map[string][]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string][]byte{}
	ca, err := clustertls.NewCA("nats test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, certKey, err := ca.Issue("nats", hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range regexp.MustCompile(`(cert_file|key_file|ca_file): (\S+)`).FindAllStringSubmatch(conf, -1) {
		fv, rel := mountOf(spec, c, f[2])
		if fv == nil || fv.Secret == nil || !secretHas(fv.Secret, rel, secrets) {
			t.Errorf("%s %s: no key docs/deploying.md puts in a Secret the pod mounts", f[1], f[2])
		}
		files[f[2]] = map[string][]byte{"cert_file": cert, "key_file": certKey, "ca_file": ca.CertPEM()}[f[1]]
	}
	for _, mount := range c.VolumeMounts {
		conf = strings.ReplaceAll(conf, mount.MountPath, filepath.Join(root, mount.MountPath))
	}
	for name, b := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	confFile := filepath.Join(root, "nats.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return confFile
}
