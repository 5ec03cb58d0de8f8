package deploy

import (
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// container returns the container of spec named name.
func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// expand replaces the $(VAR) references of s as the kubelet does, with the values
// vars gives.
func expand(s string, vars map[string]string) string {
	return regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`).ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// fieldRefs returns the variables of c that the downward API sets, by the field each
// reads.
func fieldRefs(c corev1.Container) map[string]string {
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			refs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	return refs
}

// podVars are the values the kubelet gives the downward API's variables of c in pod
// ordinal of s, in namespace.
func podVars(c corev1.Container, s *appsv1.StatefulSet, ordinal int, namespace string) map[string]string {
	vars := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	for name, field := range fieldRefs(c) {
		switch field {
		case "metadata.name":
			vars[name] = fmt.Sprintf("%s-%d", s.Name, ordinal)
		case "metadata.namespace":
			vars[name] = namespace
		case "status.podIP":
			vars[name] = "10.0.0.1"
		}
	}
	return vars
}

// imageUser returns the uid the Containerfile's USER gives the image.
func imageUser(t *testing.T) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^USER (\d+)`).FindStringSubmatch(readFile(t, "../Containerfile"))
	if m == nil {
		t.Fatal("the Containerfile has no USER UID")
	}
	uid, _ := strconv.ParseInt(m[1], 10, 64)
	return uid
}

// checkIntentd checks the intentd StatefulSet against the intentd of this checkout and
// the NATS StatefulSet it stores on.
func checkIntentd(t *testing.T, m *manifests, s, nats *appsv1.StatefulSet, secrets map[string][]string) {
	spec := s.Spec.Template.Spec
	c := container(t, spec, "intentd")
	bin := intentdBinary(t)
	help, _ := exec.Command(bin, "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		flags[f[1]] = true
	}
	if !flags["cluster-bind"] || !flags["shutdown-delay"] {
		t.Fatalf("intentd -h lists no --cluster-bind or --shutdown-delay; the flags were not read from:\n%s", help)
	}

	if uid := imageUser(t); spec.SecurityContext == nil || spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser != uid {
		t.Errorf("the pods do not run as the image's user, %d, who owns the image's /data", uid)
	}
	for _, e := range c.Env {
		if name, ok := strings.CutPrefix(e.Name, "INTENTD_"); ok && !flags[strings.ReplaceAll(strings.ToLower(name), "_", "-")] {
			t.Errorf("the container sets %s, which sets no flag of intentd", e.Name)
		}
	}
	var args []string
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "--") || !strings.Contains(a, "=") {
			t.Fatalf("argument %q: the test reads --name=value", a)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] || name == "listen" {
			t.Errorf("argument %s: no flag of intentd, or --listen, which the probes and the image's health check read from INTENTD_LISTEN", a)
		}
		args = append(args, a)
	}
	// Each pod's own command line, as the kubelet expands it, must parse: --version
	// answers once every flag before it parsed, and starts nothing.
	for ord := 0; ord < int(*s.Spec.Replicas); ord++ {
		vars := podVars(c, s, ord, m.namespace)
		var expanded []string
		for _, a := range args {
			expanded = append(expanded, expand(a, vars))
		}
		if out, err := exec.Command(bin, append(expanded, "--version")...).CombinedOutput(); err != nil {
			t.Errorf("pod %d: intentd %s: %v\n%s", ord, strings.Join(expanded, " "), err, out)
		}
	}

	checkIntentdProbes(t, c, args, help, spec)
	checkMembers(t, m, s, c, args)
	checkStoreURLs(t, args, nats)
	checkKeyFiles(t, s, c, args, secrets)
}

// checkIntentdProbes: the probes ask intentd's routes on the port it listens on, and a
// shutdown outlasts the readiness checks that take the pod out of its Service.
func checkIntentdProbes(t *testing.T, c corev1.Container, args []string, help []byte, spec corev1.PodSpec) {
	listen := ""
	for _, e := range c.Env {
		if e.Name == "INTENTD_LISTEN" {
			listen = e.Value
		}
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("INTENTD_LISTEN=%q: %v", listen, err)
	}
	routes := readFile(t, "../http/routes.go")
	pod := &corev1.PodTemplateSpec{Spec: spec}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"readiness", c.ReadinessProbe, "/readyz"},
		{"liveness", c.LivenessProbe, "/healthz"},
		{"startup", c.StartupProbe, "/healthz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no %s probe by HTTP GET", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || !strings.Contains(routes, `{"GET", "`+p.path+`"`) {
			t.Errorf("%s probe asks %s; want %s, a GET route of http/routes.go", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if n, ok := containerPort(pod, p.probe.HTTPGet.Port.String()); !ok || fmt.Sprint(n) != port {
			t.Errorf("%s probe asks port %s; want the port of INTENTD_LISTEN, %s", p.name, p.probe.HTTPGet.Port.String(), port)
		}
	}
	if r := c.ReadinessProbe; r != nil {
		delay := durationArg(t, args, help, "shutdown-delay")
		checks := time.Duration(r.PeriodSeconds*r.FailureThreshold) * time.Second
		if delay < checks {
			t.Errorf("--shutdown-delay %s is shorter than the %s the readiness probe takes to see /readyz fail: requests would meet a closed listener", delay, checks)
		}
		timeout := durationArg(t, args, help, "shutdown-timeout")
		grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
		if closing := 10 * time.Second; delay+timeout+closing > grace {
			t.Errorf("terminationGracePeriodSeconds %s does not cover --shutdown-delay %s, --shutdown-timeout %s and %s to close", grace, delay, timeout, closing)
		}
	}
}

// checkMembers: each member listens on its pod's address and is reached at its name
// under the headless Service, a name its certificate can carry (a pod's address
// changes when it moves), on the port the Service and the container publish.
func checkMembers(t *testing.T, m *manifests, s *appsv1.StatefulSet, c corev1.Container, args []string) {
	refs := fieldRefs(c)
	bind, advertise := argValue(args, "cluster-bind"), argValue(args, "cluster-advertise")
	bindHost, bindPort, err := net.SplitHostPort(bind)
	if err != nil {
		t.Fatalf("--cluster-bind=%s: %v", bind, err)
	}
	host, port, err := net.SplitHostPort(advertise)
	if err != nil {
		t.Fatalf("--cluster-advertise=%s: %v", advertise, err)
	}
	if bindHost != "$(POD_IP)" || refs["POD_IP"] != "status.podIP" || bindPort != port {
		t.Errorf("--cluster-bind=%s (POD_IP from %q); want $(POD_IP):%s, the pod's address, from status.podIP", bind, refs["POD_IP"], port)
	}
	if want := "$(POD_NAME)." + s.Spec.ServiceName + ".$(POD_NAMESPACE).svc.cluster.local"; host != want || refs["POD_NAME"] != "metadata.name" || refs["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("--cluster-advertise host %s (POD_NAME from %q, POD_NAMESPACE from %q); want %s, from the pod's name and namespace", host, refs["POD_NAME"], refs["POD_NAMESPACE"], want)
	}
	pod := &s.Spec.Template
	if n, ok := containerPort(pod, "members"); !ok || fmt.Sprint(n) != port {
		t.Errorf("--cluster-advertise port %s; want the container's port members (%d)", port, n)
	}
	svc := m.services[s.Spec.ServiceName]
	if svc == nil || len(svc.Spec.Ports) != 1 || fmt.Sprint(svc.Spec.Ports[0].Port) != port {
		t.Errorf("the headless Service %s does not publish the members' port %s", s.Spec.ServiceName, port)
	}
	// The members' certificates name these hosts: docs/deploying.md's intentctl certs.
	doc := strings.ReplaceAll(readFile(t, "../docs/deploying.md"), "\\\n", " ")
	for ord := 0; ord < int(*s.Spec.Replicas); ord++ {
		vars := podVars(c, s, ord, m.namespace)
		want := fmt.Sprintf("%s=%s", vars["POD_NAME"], expand(host, vars))
		if !strings.Contains(doc, want) {
			t.Errorf("docs/deploying.md's intentctl certs does not issue %s, the host member %d is dialled at", want, ord)
		}
	}
}

// checkStoreURLs: --store names every NATS server by its name under the NATS
// StatefulSet's Service, on the client port, over TLS, and the stream is replicated
// on all of them.
func checkStoreURLs(t *testing.T, args []string, nats *appsv1.StatefulSet) {
	store := argValue(args, "store")
	port, _ := containerPort(&nats.Spec.Template, "client")
	var want []string
	for i := 0; i < int(*nats.Spec.Replicas); i++ {
		want = append(want, fmt.Sprintf("tls://%s-%d.%s:%d", nats.Name, i, nats.Spec.ServiceName, port))
	}
	if store != strings.Join(want, ",") {
		t.Errorf("--store=%s; want %s", store, strings.Join(want, ","))
	}
	for _, u := range strings.Split(store, ",") {
		if p, err := url.Parse(u); err != nil || p.User != nil {
			t.Errorf("--store URL %s: %v; want no credentials in it (they are given by file)", u, err)
		}
	}
	if r := argValue(args, "nats-replicas"); r != fmt.Sprint(*nats.Spec.Replicas) {
		t.Errorf("--nats-replicas=%s; want %d, one a NATS server", r, *nats.Spec.Replicas)
	}
}

// keyFlags are intentd's flags that name a file intentd refuses when group or others
// may read it.
var keyFlags = map[string]bool{"signing-key": true, "cluster-tls-key": true, "nats-token-file": true, "nats-nkey": true}

// fileFlags are intentd's flags that name a file it reads.
var fileFlags = []string{"signing-key", "tokens", "cluster-tls-cert", "cluster-tls-key", "cluster-tls-ca", "nats-token-file", "nats-tls-ca", "nats-nkey", "nats-creds"}

// checkKeyFiles: every file a flag names is in a volume of the container: a Secret's
// key there, or a file the init container copies from a Secret's key, for each pod;
// the keys intentd holds to mode 0600 only by the copy, made with a mode it accepts
// (a Secret's own files are readable by the group of fsGroup).
func checkKeyFiles(t *testing.T, s *appsv1.StatefulSet, c corev1.Container, args []string, secrets map[string][]string) {
	spec := s.Spec.Template.Spec
	copies := initCopies(t, spec)
	for _, name := range fileFlags {
		file := argValue(args, name)
		if file == "" {
			continue
		}
		vol, rel := mountOf(spec, c, file)
		switch {
		case vol == nil:
			t.Errorf("--%s=%s is in no volume of the container", name, file)
		case vol.Secret != nil:
			if keyFlags[name] {
				t.Errorf("--%s=%s is a Secret's file, which fsGroup makes group-readable and intentd refuses: copy it as the init container does", name, file)
			}
			if !secretHas(vol.Secret, rel, secrets) {
				t.Errorf("--%s=%s: Secret %s has no key for %s in docs/deploying.md", name, file, vol.Secret.SecretName, rel)
			}
		case vol.EmptyDir != nil:
			cp, ok := copies[file]
			if !ok {
				t.Errorf("--%s=%s is in the emptyDir %s, and the init container does not write it", name, file, vol.Name)
				continue
			}
			if keyFlags[name] && cp.mode&0o077 != 0 {
				t.Errorf("--%s=%s is copied with mode %04o, which intentd refuses; want 0400", name, file, cp.mode)
			}
			for ord := 0; ord < int(*s.Spec.Replicas); ord++ {
				init := spec.InitContainers[0]
				src := expand(strings.ReplaceAll(cp.src, "$POD_NAME", "$(POD_NAME)"), podVars(init, s, ord, ""))
				svol, srel := mountOf(spec, init, src)
				if svol == nil || svol.Secret == nil || !secretHas(svol.Secret, srel, secrets) {
					t.Errorf("pod %d: the init container copies %s to %s, which is no key docs/deploying.md puts in a Secret", ord, src, file)
				}
			}
		default:
			t.Errorf("--%s=%s is in volume %s, neither a Secret nor the init container's copies", name, file, vol.Name)
		}
	}
}

// secretHas reports whether the file rel of a Secret volume is a key docs make.
func secretHas(v *corev1.SecretVolumeSource, rel string, secrets map[string][]string) bool {
	key := rel
	if len(v.Items) > 0 {
		key = ""
		for _, it := range v.Items {
			if it.Path == rel {
				key = it.Key
			}
		}
	}
	for _, k := range secrets[v.SecretName] {
		if k == key {
			return true
		}
	}
	return false
}

// mountOf returns the volume of spec that c mounts file from, and file's path inside it.
func mountOf(spec corev1.PodSpec, c corev1.Container, file string) (*corev1.Volume, string) {
	for _, vm := range c.VolumeMounts {
		if rel, ok := strings.CutPrefix(file, strings.TrimSuffix(vm.MountPath, "/")+"/"); ok {
			return volume(spec, vm.Name), rel
		}
	}
	return nil, ""
}

// copyStep is one `install -m MODE SRC DST` of the init container.
type copyStep struct {
	src  string
	mode int64
}

// initCopies reads the init container's script: the files it installs, by target.
func initCopies(t *testing.T, spec corev1.PodSpec) map[string]copyStep {
	t.Helper()
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers; want the one that copies the keys", len(spec.InitContainers))
	}
	script := strings.Join(spec.InitContainers[0].Command, "\n")
	copies := map[string]copyStep{}
	for _, m := range regexp.MustCompile(`install -m (0[0-7]{3}) (\S+) (\S+)`).FindAllStringSubmatch(script, -1) {
		mode, _ := strconv.ParseInt(m[1], 8, 64)
		copies[path.Clean(m[3])] = copyStep{src: m[2], mode: mode}
	}
	if len(copies) == 0 {
		t.Fatalf("the init container's script installs nothing:\n%s", script)
	}
	return copies
}
