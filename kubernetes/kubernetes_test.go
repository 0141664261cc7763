package kubernetes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/k8stest"
)

func TestMain(m *testing.M) { os.Exit(k8stest.Main(m)) }

// small are requests that let a pool's worth of guests share the test
// node's two CPUs.
var small = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("50m"),
	corev1.ResourceMemory: resource.MustParse("128Mi"),
}

// testBackend is a backend on the test cluster, with the imported image.
func testBackend(t *testing.T) *Backend {
	t.Helper()
	b := &Backend{Options: Options{
		Kubeconfig: k8stest.Kubeconfig(t),
		Image:      k8stest.Image,
		PullPolicy: "Never", // imported: the cluster has no registry
		Requests:   small,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("the test cluster does not answer: %v", err)
	}
	return b
}

// up starts a guest and takes it down at the test's end.
func up(t *testing.T, b *Backend, spec backend.Spec) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec.Progress = func(l string) { t.Logf("up: %s", l) }
	start := time.Now()
	inst, err := b.Up(ctx, spec)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("Pod create → agentd answering: %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := inst.Down(context.Background()); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return inst.(*instance)
}

// dial connects a client to the guest's agentd through its port-forward.
func dial(t *testing.T, inst *instance) *guest.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := backend.Dial(ctx, inst)
	if err != nil {
		t.Fatalf("dial agentd in %s: %v", inst.p.name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// left lists what of a guest is still there: its objects in the cluster
// (or why one could not be read) and its state directory on this host.
func left(c *clients, namespace, name, stateDir string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	check := func(kind string, err error) {
		switch {
		case err == nil:
			out = append(out, kind+" "+namespace+"/"+name)
		case !apierrors.IsNotFound(err):
			out = append(out, kind+" "+namespace+"/"+name+": "+err.Error())
		}
	}
	_, err := c.set.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	check("Pod", err)
	_, err = c.set.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	check("Secret", err)
	_, err = c.set.NetworkingV1().NetworkPolicies(namespace).Get(ctx, name, metav1.GetOptions{})
	check("NetworkPolicy", err)
	_, err = c.set.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	check("ConfigMap", err)
	if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		out = append(out, "state directory "+stateDir)
	}
	return out
}

// podLeft is what of p's guest is still there (left).
func podLeft(p *pod) []string { return left(p.cli, p.namespace, p.name, p.stateDir) }

// TestHardenedPodAdmittedUnderRestricted: the guest's Pod is admitted in
// the default namespace, which Up created enforcing Pod Security
// "restricted"; the Pod carries every hardening setting, the NetworkPolicy
// selects it and denies all ingress and egress, the Secret is owned by
// it; and the same Pod made privileged, or keeping its capabilities, is
// refused there.
func TestHardenedPodAdmittedUnderRestricted(t *testing.T) {
	t.Parallel()
	b := testBackend(t)
	inst := up(t, b, backend.Spec{Width: 640, Height: 480})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := inst.p.cli

	ns, err := c.set.CoreV1().Namespaces().Get(ctx, DefaultNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces %q, want restricted", ns.Name, got)
	}

	po, err := inst.p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	psc, sc := po.Spec.SecurityContext, po.Spec.Containers[0].SecurityContext
	switch {
	case po.Spec.AutomountServiceAccountToken == nil || *po.Spec.AutomountServiceAccountToken:
		t.Error("the service account token is mounted")
	case psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0:
		t.Errorf("pod security context %+v: want non-root", psc)
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("seccomp %+v, want RuntimeDefault", psc.SeccompProfile)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation allowed")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("root filesystem writable")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want ALL dropped", sc.Capabilities)
	case po.Spec.Containers[0].Resources.Limits.Memory().IsZero() || po.Spec.Containers[0].Resources.Limits.StorageEphemeral().IsZero():
		t.Errorf("resources %+v: want limits", po.Spec.Containers[0].Resources)
	case po.Spec.Containers[0].ReadinessProbe == nil:
		t.Error("no readiness probe")
	}
	// The kubelet says the readiness probe passes.
	readyBy := time.Now().Add(30 * time.Second)
	for !podReady(po) && time.Now().Before(readyBy) {
		time.Sleep(500 * time.Millisecond)
		if po, err = inst.p.get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !podReady(po) {
		t.Errorf("the Pod is not Ready: %+v", po.Status.Conditions)
	}
	// Agentd's user, and only it, reads the token (the init container's
	// copy: the desktop's container does not mount the Secret); nothing else in the
	// root filesystem is writable.
	var out, errOut strings.Builder
	if err := inst.p.exec(ctx, []string{"sh", "-c", "id -u; stat -L -c '%a %u %g' /run/agentd/token; touch /usr/x 2>&1 || true"}, &out, &errOut); err != nil {
		t.Fatalf("exec: %v: %s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != "1000" || lines[1] != "600 1000 1000" || !strings.Contains(lines[2], "Read-only file system") {
		t.Errorf("in the Pod: %q, want uid 1000, the token 0600 1000:1000, a read-only root", lines)
	}

	checkPolicy(t, inst.p, true, po)
	sec, err := c.set.CoreV1().Secrets(inst.p.namespace).Get(ctx, inst.p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != po.UID {
		t.Errorf("the Secret's owners %+v, want the Pod %s", sec.OwnerReferences, po.UID)
	}

	// The same Pod, less hardened, is refused by admission.
	for name, weaken := range map[string]func(*corev1.Pod){
		"privileged": func(p *corev1.Pod) {
			// Validation refuses privileged with no escalation anyway.
			p.Spec.Containers[0].SecurityContext.Privileged, p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr(true), nil
		},
		"capabilities": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities = nil },
		"root": func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot, p.Spec.SecurityContext.RunAsUser = nil, ptr(int64(0))
		},
	} {
		cfg := podConfig{name: "agentd-test-" + name, namespace: DefaultNamespace, width: 640, height: 480, opts: b.Options}
		bad := cfg.pod()
		weaken(bad)
		created, err := c.set.CoreV1().Pods(DefaultNamespace).Create(ctx, bad, metav1.CreateOptions{})
		if err == nil {
			c.set.CoreV1().Pods(DefaultNamespace).Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
			t.Errorf("a %s Pod was admitted", name)
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
			t.Errorf("a %s Pod: %v, want Pod Security's refusal", name, err)
		}
	}
}

// checkPolicy checks the guest's NetworkPolicy: it selects exactly the Pod,
// is owned by it, and has no rule, for ingress and (without a network)
// egress.
func checkPolicy(t *testing.T, p *pod, denyEgress bool, po *corev1.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pol, err := p.cli.set.NetworkingV1().NetworkPolicies(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the guest's NetworkPolicy: %v", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := p.cli.set.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || len(pods.Items) != 1 || pods.Items[0].Name != p.name {
		t.Errorf("the policy's selector %q selects %d Pods, want only %s", sel, len(pods.Items), p.name)
	}
	want := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if denyEgress {
		want = append(want, networkingv1.PolicyTypeEgress)
	}
	if !slices.Equal(pol.Spec.PolicyTypes, want) || len(pol.Spec.Ingress) > 0 || len(pol.Spec.Egress) > 0 {
		t.Errorf("policy types %v with %d ingress and %d egress rules: want %v and no rule", pol.Spec.PolicyTypes, len(pol.Spec.Ingress), len(pol.Spec.Egress), want)
	}
	if len(pol.OwnerReferences) != 1 || pol.OwnerReferences[0].UID != po.UID {
		t.Errorf("the policy's owners %+v, want the Pod", pol.OwnerReferences)
	}
}

// TestUpNeverReadyFailsWithEvents: a Pod that can never run fails Up early
// with the reason; one that is never scheduled fails it at StartTimeout,
// with the Pod's events in the message; neither leaves anything behind.
func TestUpNeverReadyFailsWithEvents(t *testing.T) {
	t.Parallel()
	base := testBackend(t)
	for _, tc := range []struct {
		name   string
		opts   func(*Options)
		within time.Duration
		want   []string
		mine   func(corev1.Container) bool
	}{
		{"missing image", func(o *Options) { o.Image = "agentd-no-such-image:test" },
			time.Minute, []string{"ErrImageNeverPull", "agentd-no-such-image"},
			func(c corev1.Container) bool { return c.Image == "agentd-no-such-image:test" }},
		{"unschedulable", func(o *Options) {
			o.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500")}
			o.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500")}
			o.StartTimeout = 10 * time.Second
		}, 40 * time.Second, []string{"not ready after 10s", "FailedScheduling", "Insufficient cpu"},
			func(c corev1.Container) bool { return c.Resources.Requests.Cpu().Cmp(resource.MustParse("500")) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{Options: base.Options}
			tc.opts(&b.Options)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			inst, err := b.Up(ctx, backend.Spec{Width: 640, Height: 480})
			took := time.Since(start)
			if err == nil {
				inst.Down(ctx)
				t.Fatal("Up succeeded")
			}
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
			if took > tc.within {
				t.Errorf("Up took %v to fail, want under %v", took, tc.within)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q", w)
				}
			}
			c, _ := b.connect()
			list, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + managedBy})
			if err != nil {
				t.Fatal(err)
			}
			for _, po := range list.Items {
				// This case's Pods: other tests' guests run beside it.
				if tc.mine(po.Spec.Containers[0]) {
					t.Errorf("Pod %s left after the failed Up", po.Name)
				}
			}
		})
	}
}

// TestNamedGuestFoundFromAnotherProcess: a second backend (another
// agentctl) finds a named guest by its label, reads its token from the
// Secret, reaches agentd and takes it down; the first one's Down of the
// vanished Pod then succeeds.
func TestNamedGuestFoundFromAnotherProcess(t *testing.T) {
	t.Parallel()
	b := testBackend(t)
	name := "k8s-test-open"
	inst := up(t, b, backend.Spec{Name: name, Width: 640, Height: 480})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	other := &Backend{Options: b.Options}
	names, err := other.List(ctx)
	if err != nil || !slices.Contains(names, name) {
		t.Fatalf("List: %v, %v: want %s", names, err, name)
	}
	o, err := other.Open(ctx, name)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	oi := o.(*instance)
	if oi.p.name != inst.p.name || oi.Describe().Instance != inst.Describe().Instance {
		t.Fatalf("Open found %s, Up made %s", oi.p.name, inst.p.name)
	}
	want, _ := os.ReadFile(inst.Describe().TokenFile)
	if got, err := os.ReadFile(oi.Describe().TokenFile); err != nil || string(got) != string(want) {
		t.Errorf("the opened guest's token %q (%v), want Up's", got, err)
	}
	if st := o.Status(ctx); !st.Running || st.Health != "ok" {
		t.Errorf("Status of the opened guest: %+v", st)
	}
	shot, err := dial(t, oi).Screenshot(ctx)
	if err != nil || len(shot.PNG) == 0 {
		t.Fatalf("screenshot through the opened guest: %v", err)
	}
	if err := o.Down(ctx); err != nil {
		t.Fatalf("Down of the opened guest: %v", err)
	}
	if _, err := other.Open(ctx, name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Down: %v, want fs.ErrNotExist", err)
	}
	if st := inst.Status(ctx); st.Running {
		t.Errorf("Status after the other's Down: %+v", st)
	}
	if err := inst.Down(ctx); err != nil {
		t.Errorf("Down of the vanished Pod: %v", err)
	}
	if l := podLeft(inst.p); len(l) > 0 {
		t.Errorf("left: %v", l)
	}
}
