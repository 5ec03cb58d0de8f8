package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const kustomizeDir = "kubernetes"

// kustomization is what deploy/kubernetes/kustomization.yaml may hold: it is read
// strictly, so a field the test does not know fails it rather than going unchecked.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images"`
}

// k8sDecoder decodes the objects of the API groups the manifests use, refusing an
// unknown or repeated field, as `kubectl apply --validate=strict` does.
func k8sDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// manifests are the decoded objects of deploy/kubernetes, by kind and name.
type manifests struct {
	namespace    string
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	pdbs         map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	namespaces   map[string]*corev1.Namespace
	all          []runtime.Object
}

// decodeAll decodes every YAML document of text strictly into m.
func (m *manifests) decodeAll(t *testing.T, dec runtime.Decoder, name string, text []byte) {
	t.Helper()
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		m.all = append(m.all, obj)
		switch o := obj.(type) {
		case *appsv1.StatefulSet:
			m.statefulSets[o.Name] = o
		case *corev1.Service:
			m.services[o.Name] = o
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			m.pdbs[o.Name] = o
		case *networkingv1.NetworkPolicy:
			m.policies[o.Name] = o
		case *corev1.Namespace:
			m.namespaces[o.Name] = o
		default:
			t.Fatalf("%s: document %d: a %T, which the test does not check", name, i, obj)
		}
	}
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

func newManifests() *manifests {
	return &manifests{
		statefulSets: map[string]*appsv1.StatefulSet{},
		services:     map[string]*corev1.Service{},
		configMaps:   map[string]*corev1.ConfigMap{},
		pdbs:         map[string]*policyv1.PodDisruptionBudget{},
		policies:     map[string]*networkingv1.NetworkPolicy{},
		namespaces:   map[string]*corev1.Namespace{},
	}
}

// loadManifests reads the kustomization and decodes every resource it lists.
func loadManifests(t *testing.T) (*manifests, kustomization) {
	t.Helper()
	var k kustomization
	if err := yaml.UnmarshalStrict([]byte(readFile(t, filepath.Join(kustomizeDir, "kustomization.yaml"))), &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.Kind != "Kustomization" || k.Namespace == "" || len(k.Resources) == 0 {
		t.Fatalf("kustomization.yaml: kind %q, namespace %q, %d resources; want a Kustomization that sets a namespace", k.Kind, k.Namespace, len(k.Resources))
	}
	dec := k8sDecoder(t)
	m := newManifests()
	m.namespace = k.Namespace
	for _, r := range k.Resources {
		m.decodeAll(t, dec, r, []byte(readFile(t, filepath.Join(kustomizeDir, r))))
	}
	return m, k
}

// TestKubernetesDecodesStrictly: the decoder the checks rest on refuses a field that
// the API does not have and one given twice; a misspelt field would otherwise be
// dropped by the API server with a warning, and its setting never made.
func TestKubernetesDecodesStrictly(t *testing.T) {
	dec := k8sDecoder(t)
	for name, doc := range map[string]string{
		"unknown field":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIp: None\n",
		"repeated field": "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  name: y\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := dec.Decode([]byte(doc), nil, nil); err == nil {
				t.Fatalf("decoded %q; want it refused", doc)
			}
		})
	}
}

// TestKubernetesManifests decodes every object of deploy/kubernetes strictly with the
// Kubernetes API's types and checks that they deploy the intentd of this checkout as
// docs/deploying.md says: the flags are intentd's, the probes ask its routes on its
// port, the members reach each other at names their certificates can carry, every
// Secret and key they read is one the docs make, and the StatefulSets are spread,
// budgeted for disruption and run as the image's non-root user.
func TestKubernetesManifests(t *testing.T) {
	m, k := loadManifests(t)
	if _, ok := m.namespaces[k.Namespace]; !ok {
		t.Errorf("the kustomization's namespace %s is not among its objects", k.Namespace)
	}
	intentd, nats := m.statefulSets["intentd"], m.statefulSets["nats"]
	if intentd == nil || nats == nil {
		t.Fatalf("want StatefulSets intentd and nats; have %v", keys(m.statefulSets))
	}
	secrets := documentedSecrets(t)
	for _, s := range m.statefulSets {
		t.Run("StatefulSet "+s.Name, func(t *testing.T) {
			checkStatefulSet(t, m, s)
			checkSecretsRead(t, s, secrets)
		})
	}
	t.Run("services", func(t *testing.T) { checkServices(t, m) })
	t.Run("network policies", func(t *testing.T) { checkNetworkPolicies(t, m) })
	t.Run("intentd's flags", func(t *testing.T) { checkIntentd(t, m, intentd, nats, secrets) })
	t.Run("NATS configuration", func(t *testing.T) { checkNATS(t, m, nats, secrets) })
}

// checkStatefulSet checks what every StatefulSet here needs: three pods, one a
// machine, at most one of them taken by a drain, as non-root users with nothing more
// than they need.
func checkStatefulSet(t *testing.T, m *manifests, s *appsv1.StatefulSet) {
	pod := s.Spec.Template
	sel := labels.Set(pod.Labels).AsSelector()
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
		t.Errorf("replicas %v; want 3", s.Spec.Replicas)
	}
	if svc := m.services[s.Spec.ServiceName]; svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q: want a headless Service that publishes pods before they are ready (their names are how the others reach them)", s.Spec.ServiceName)
	}
	if !matches(s.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("the selector %v does not select the pods %v", s.Spec.Selector.MatchLabels, pod.Labels)
	}
	var anti bool
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			anti = anti || (term.TopologyKey == corev1.LabelHostname && term.LabelSelector != nil && matches(term.LabelSelector.MatchLabels, pod.Labels))
		}
	}
	if !anti {
		t.Error("no required pod anti-affinity on kubernetes.io/hostname among its own pods: two members could share a machine, and die with it")
	}
	var budget *policyv1.PodDisruptionBudget
	for _, p := range m.pdbs {
		if p.Spec.Selector != nil && matches(p.Spec.Selector.MatchLabels, pod.Labels) {
			budget = p
		}
	}
	if budget == nil || budget.Spec.MaxUnavailable == nil || budget.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("want a PodDisruptionBudget of maxUnavailable 1 over the pods %s: a drain must leave two of three", sel)
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.FSGroup == nil ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want a non-root user, an fsGroup for the data volume and the runtime's seccomp profile", sc)
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		cs := c.SecurityContext
		if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
			cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s: security context %+v; want no privilege escalation, a read-only root and every capability dropped", c.Name, cs)
		}
		for _, vm := range c.VolumeMounts {
			if volume(pod.Spec, vm.Name) == nil && !hasClaim(s, vm.Name) {
				t.Errorf("container %s mounts %s, which is no volume of the pod", c.Name, vm.Name)
			}
		}
	}
}

// hasClaim reports whether the StatefulSet makes a volume claim named name.
func hasClaim(s *appsv1.StatefulSet, name string) bool {
	for _, c := range s.Spec.VolumeClaimTemplates {
		if c.Name == name {
			return true
		}
	}
	return false
}

// volume returns the pod's volume named name.
func volume(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// matches reports whether a selector's labels select an object of labels have.
func matches(selector, have map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(have))
}

// podsOf returns the pod template of the StatefulSet whose pods selector selects.
func podsOf(m *manifests, selector map[string]string) *corev1.PodTemplateSpec {
	for _, s := range m.statefulSets {
		if matches(selector, s.Spec.Template.Labels) {
			return &s.Spec.Template
		}
	}
	return nil
}

// containerPort returns the port of a container of pod named name (or numbered so).
func containerPort(pod *corev1.PodTemplateSpec, name string) (int32, bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name || fmt.Sprint(p.ContainerPort) == name {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// checkServices: each Service selects pods of a StatefulSet, and its target ports are
// ports those pods have.
func checkServices(t *testing.T, m *manifests) {
	for _, svc := range m.services {
		pod := podsOf(m, svc.Spec.Selector)
		if pod == nil {
			t.Errorf("Service %s selects %v: no pods of these manifests", svc.Name, svc.Spec.Selector)
			continue
		}
		for _, p := range svc.Spec.Ports {
			if n, ok := containerPort(pod, p.TargetPort.String()); !ok || (svc.Spec.ClusterIP == corev1.ClusterIPNone && n != p.Port) {
				t.Errorf("Service %s port %s: target %s is no port of its pods (or, headless, not the same number)", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}
}

// checkNetworkPolicies: each policy selects pods of a StatefulSet, admits from pods
// there are, and names ports those pods have.
func checkNetworkPolicies(t *testing.T, m *manifests) {
	if len(m.policies) == 0 {
		t.Fatal("no NetworkPolicy: the members' port and NATS would be open to every pod")
	}
	for _, np := range m.policies {
		pod := podsOf(m, np.Spec.PodSelector.MatchLabels)
		if pod == nil {
			t.Errorf("NetworkPolicy %s selects no pods of these manifests", np.Name)
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, from := range rule.From {
				if from.PodSelector == nil || podsOf(m, from.PodSelector.MatchLabels) == nil {
					t.Errorf("NetworkPolicy %s admits %+v, no pods of these manifests", np.Name, from)
				}
			}
			for _, p := range rule.Ports {
				if _, ok := containerPort(pod, p.Port.String()); !ok {
					t.Errorf("NetworkPolicy %s opens port %s, which its pods do not have", np.Name, p.Port.String())
				}
			}
		}
	}
}

// documentedSecrets returns the Secrets docs/deploying.md makes with `kubectl create
// secret generic`, each with its keys (--from-file=KEY=PATH, or the file's name).
func documentedSecrets(t *testing.T) map[string][]string {
	t.Helper()
	doc := strings.ReplaceAll(readFile(t, "../docs/deploying.md"), "\\\n", " ")
	secrets := map[string][]string{}
	create := regexp.MustCompile(`kubectl -n \S+ create secret generic (\S+)((?: +--from-file=\S+)+)`)
	for _, m := range create.FindAllStringSubmatch(doc, -1) {
		for _, f := range strings.Fields(m[2]) {
			v := strings.TrimPrefix(f, "--from-file=")
			key, _, named := strings.Cut(v, "=")
			if !named {
				key = filepath.Base(v)
			}
			secrets[m[1]] = append(secrets[m[1]], key)
		}
	}
	if len(secrets) < 4 {
		t.Fatalf("found %d Secrets made by kubectl create secret generic in docs/deploying.md; the commands were not read", len(secrets))
	}
	return secrets
}

// checkSecretsRead: every Secret the pods read, by volume or variable, and every key
// of it they name, is one docs/deploying.md makes.
func checkSecretsRead(t *testing.T, s *appsv1.StatefulSet, secrets map[string][]string) {
	spec := s.Spec.Template.Spec
	has := func(name, key string) bool { return slices.Contains(secrets[name], key) }
	for _, v := range spec.Volumes {
		if v.Secret == nil {
			continue
		}
		if _, ok := secrets[v.Secret.SecretName]; !ok {
			t.Errorf("volume %s reads Secret %s, which docs/deploying.md does not make", v.Name, v.Secret.SecretName)
		}
		for _, it := range v.Secret.Items {
			if !has(v.Secret.SecretName, it.Key) {
				t.Errorf("volume %s reads key %s of Secret %s, which docs/deploying.md does not put there (it puts %v)", v.Name, it.Key, v.Secret.SecretName, secrets[v.Secret.SecretName])
			}
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, e := range c.Env {
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && !has(ref.SecretKeyRef.Name, ref.SecretKeyRef.Key) {
				t.Errorf("container %s: %s reads key %s of Secret %s, which docs/deploying.md does not make", c.Name, e.Name, ref.SecretKeyRef.Key, ref.SecretKeyRef.Name)
			}
		}
	}
}

// TestKustomizeBuilds runs `kubectl kustomize` on deploy/kubernetes, as `kubectl apply
// -k` would, and decodes what it builds strictly: every object in the namespace, with
// the common label.
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed (https://kubernetes.io/docs/tasks/tools/): the kustomization is not built")
	}
	out, err := exec.Command(kubectl, "kustomize", kustomizeDir).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", kustomizeDir, err, stderr)
	}
	_, k := loadManifests(t)
	built := newManifests()
	built.decodeAll(t, k8sDecoder(t), "kubectl kustomize", out)
	if len(built.all) < 10 {
		t.Fatalf("kubectl kustomize built %d objects; want every object of the kustomization", len(built.all))
	}
	for _, obj := range built.all {
		meta := obj.(interface {
			GetName() string
			GetNamespace() string
			GetLabels() map[string]string
		})
		if _, isNS := obj.(*corev1.Namespace); !isNS && meta.GetNamespace() != k.Namespace {
			t.Errorf("%T %s: namespace %q; want %q", obj, meta.GetName(), meta.GetNamespace(), k.Namespace)
		}
		for _, l := range k.Labels {
			for name, v := range l.Pairs {
				if meta.GetLabels()[name] != v {
					t.Errorf("%T %s: label %s=%q; want %q", obj, meta.GetName(), name, meta.GetLabels()[name], v)
				}
			}
		}
	}
	if s := built.statefulSets["intentd"]; s == nil {
		t.Error("kubectl kustomize built no StatefulSet intentd")
	} else if img := s.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "localhost/intentd:") {
		t.Errorf("the built StatefulSet runs image %s; want what make image builds", img)
	}
}
