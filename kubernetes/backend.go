package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/randhex"
)

// Name is "kubernetes".
func (*Backend) Name() string { return "kubernetes" }

var (
	_ backend.Backend      = (*Backend)(nil)
	_ backend.FlagSetter   = (*Backend)(nil)
	_ backend.SharedPool   = (*Backend)(nil)
	_ backend.Instance     = (*instance)(nil)
	_ backend.AgentdDialer = (*instance)(nil)
	_ backend.FileReader   = (*instance)(nil)
	_ backend.LogReader    = (*instance)(nil)
	_ backend.StartTimer   = (*instance)(nil)
)

// Check refuses what a Pod of the guest image cannot be: a desktop the
// image does not show, the browser without a seccomp profile allowing its
// sandbox, an unknown pull policy.
func (b *Backend) Check(spec backend.Spec) error {
	if err := backend.CheckImage(spec, "a Pod"); err != nil {
		return err
	}
	if spec.Browser && b.Options.SeccompProfile == "" {
		return errors.New("kubernetes guest with the browser: Chromium's sandbox needs user namespaces, which RuntimeDefault seccomp refuses: install a profile allowing them on the nodes and pass --seccomp-profile (README, \"Kubernetes guests\")")
	}
	switch corev1.PullPolicy(b.Options.PullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--image-pull-policy %q: use Always, IfNotPresent or Never", b.Options.PullPolicy)
	}
	return nil
}

// Up creates the guest's Pod and returns once agentd answers through the
// port-forward; within Options.StartTimeout, or it fails with the Pod's
// state, events and last log lines, and removes what it created.
func (b *Backend) Up(ctx context.Context, spec backend.Spec) (backend.Instance, error) {
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	return backend.StartImage(ctx, spec, func(ctx context.Context, apps backend.ImageApps) (backend.Instance, error) {
		p, err := b.up(ctx, c, spec, apps)
		if err != nil {
			return nil, err
		}
		return newInstance(p, spec.Name, spec.AppsName(), apps.Outputs), nil
	})
}

// up creates the objects and waits for agentd.
func (b *Backend) up(ctx context.Context, c *clients, spec backend.Spec, apps backend.ImageApps) (*pod, error) {
	begun := time.Now()
	if err := b.ensureNamespace(ctx, c); err != nil {
		return nil, err
	}
	w, h := spec.Width, spec.Height
	if w == 0 && spec.Desktop != nil {
		w, h = spec.Desktop.Size()
	}
	if w == 0 {
		w, h = 1440, 900
	}
	p := &pod{cli: c, namespace: c.namespace, name: podName(spec.Name)}
	p.marks = []backend.Milestone{{Name: "up", At: begun}}
	mark := func(name string) { p.marks = append(p.marks, backend.Milestone{Name: name, At: time.Now()}) }
	lbl := map[string]string{LabelManaged: managedBy, LabelPod: p.name, LabelApps: spec.AppsName()}
	if spec.Name != "" {
		lbl[LabelGuest] = spec.Name
	}
	for k, v := range b.extraLabels {
		lbl[k] = v
	}
	cfg := podConfig{
		name: p.name, namespace: p.namespace, labels: lbl, opts: b.Options,
		width: w, height: h, apps: apps.Apps, url: apps.URL, file: apps.File,
		code: spec.Code, browser: spec.Browser,
	}
	var cm *corev1.ConfigMap
	if apps.ConfigDir != "" {
		var err error
		if cm, cfg.configItems, err = cfg.configMap(apps.ConfigDir); err != nil {
			return nil, p.errorf("%w", err)
		}
	}
	spec.Say(fmt.Sprintf("creating pod %s/%s from %s", p.namespace, p.name, cfg.pod().Spec.Containers[0].Image))

	created := false
	fail := func(err error) (*pod, error) {
		bg := context.WithoutCancel(ctx)
		if created {
			msg := "\n--- the Pod's events ---\n" + strings.TrimRight(p.events(bg), "\n")
			if logs, lerr := p.Logs(bg, 30); lerr == nil && logs != "" {
				msg += "\n--- its last log lines ---\n" + strings.TrimRight(logs, "\n")
			}
			err = fmt.Errorf("%w%s", err, msg)
		}
		if derr := p.Down(bg); derr != nil {
			err = fmt.Errorf("%w (and tearing down: %v)", err, derr)
		}
		return nil, err
	}
	token := randhex.String(32)
	if err := p.keepToken(token); err != nil {
		return fail(err)
	}
	// The policy first: the Pod never runs without it.
	pol, err := c.set.NetworkingV1().NetworkPolicies(p.namespace).Create(ctx, cfg.networkPolicy(spec.Network), metav1.CreateOptions{})
	if err != nil {
		return fail(p.errorf("create the NetworkPolicy: %w", err))
	}
	sec, err := c.set.CoreV1().Secrets(p.namespace).Create(ctx, cfg.secret(token), metav1.CreateOptions{})
	if err != nil {
		return fail(p.errorf("create the Secret: %w", err))
	}
	if cm != nil {
		if cm, err = c.set.CoreV1().ConfigMaps(p.namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fail(p.errorf("create the ConfigMap: %w", err))
		}
	}
	mark("prepared")
	po := cfg.pod()
	if b.simulated != nil {
		b.simulated(&po.Spec)
	}
	po, err = c.set.CoreV1().Pods(p.namespace).Create(ctx, po, metav1.CreateOptions{})
	if err != nil {
		// Pod Security admission's refusal says which settings it refused.
		return fail(p.errorf("create the Pod: %w", err))
	}
	created = true
	mark("created")
	// Owned by the Pod, the rest goes with it when the Pod vanishes
	// without a Down (deleted by hand, its namespace's cleanup).
	if err := p.own(ctx, po, "secrets", sec.ObjectMeta); err != nil {
		return fail(err)
	}
	if err := p.own(ctx, po, "networkpolicies", pol.ObjectMeta); err != nil {
		return fail(err)
	}
	if cm != nil {
		if err := p.own(ctx, po, "configmaps", cm.ObjectMeta); err != nil {
			return fail(err)
		}
	}
	spec.Say("waiting for agentd")
	timeout := b.Options.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	if b.simulated != nil {
		// A simulated node runs no container: its Ready is all there is.
		err = p.waitProbed(ctx)
	} else {
		err = p.waitReady(ctx, timeout, mark)
	}
	if err != nil {
		return fail(err)
	}
	spec.Say(fmt.Sprintf("guest ready in pod %s/%s", p.namespace, p.name))
	return p, nil
}

// own makes the Pod the owner of one of its objects.
func (p *pod) own(ctx context.Context, po *corev1.Pod, resource string, meta metav1.ObjectMeta) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: po.Name, UID: po.UID}},
	}})
	if err != nil {
		return err
	}
	var perr error
	switch resource {
	case "secrets":
		_, perr = p.cli.set.CoreV1().Secrets(p.namespace).Patch(ctx, meta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case "configmaps":
		_, perr = p.cli.set.CoreV1().ConfigMaps(p.namespace).Patch(ctx, meta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case "networkpolicies":
		_, perr = p.cli.set.NetworkingV1().NetworkPolicies(p.namespace).Patch(ctx, meta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if perr != nil {
		return p.errorf("make the Pod own its %s: %w", resource, perr)
	}
	return nil
}

// neverStarts are the container's waiting reasons that no wait mends.
var neverStarts = []string{"ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError"}

// waitReady polls the Pod until its container runs and agentd answers
// /healthz through the port-forward, failing early when the Pod stops or
// its container can never start.
func (p *pod) waitReady(ctx context.Context, timeout time.Duration, mark func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "the Pod is not scheduled yet"
	running, seen := false, false
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		po, err := p.get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			return p.errorf("the Pod vanished while starting")
		case err != nil:
			// The Pod's last state says more than a failed poll.
			if !seen {
				last = "asking the API server: " + err.Error()
			}
		case err == nil:
			if why := stopped(po); why != "" {
				return p.errorf("%s before agentd answered", why)
			}
			seen, last = true, describe(po)
			for _, cs := range slices.Concat(po.Status.InitContainerStatuses, po.Status.ContainerStatuses) {
				if w := cs.State.Waiting; w != nil && slices.Contains(neverStarts, w.Reason) {
					return p.errorf("its %s container cannot start: %s: %s", cs.Name, w.Reason, w.Message)
				}
			}
			for _, cs := range po.Status.ContainerStatuses {
				if cs.State.Running != nil && !running {
					running = true
					mark("running")
				}
			}
			if running {
				if err := p.healthz(ctx); err == nil {
					mark("healthy")
					return nil
				} else if ctx.Err() == nil {
					last = "agentd " + healthz.Describe(err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return p.errorf("not ready after %v (%s): %w", timeout, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// podReady reports whether the kubelet says the Pod is Ready: its
// readiness probe, agentd's /healthz, passes.
func podReady(po *corev1.Pod) bool {
	for _, c := range po.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describe says where a Pod's start is, for a timeout's message.
func describe(po *corev1.Pod) string {
	for _, c := range po.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("not scheduled: %s: %s", c.Reason, c.Message)
		}
	}
	for _, cs := range slices.Concat(po.Status.InitContainerStatuses, po.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "PodInitializing" {
			return fmt.Sprintf("container %s waiting: %s: %s", cs.Name, w.Reason, w.Message)
		}
	}
	return "phase " + string(po.Status.Phase)
}

// podName names a guest's Pod (and its Secret, NetworkPolicy and
// ConfigMap): "agentd-guest-" and random hex, or for a named guest
// "agentd-", the name in DNS form, and random hex (names may hold what
// object names may not; LabelGuest keeps the name itself).
func podName(guestName string) string {
	if guestName == "" {
		return "agentd-guest-" + randhex.String(4)
	}
	dns := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(guestName), "-"), "-")
	return "agentd-" + dns + "-" + randhex.String(3)
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Open finds a named guest's Pod by its label, in any process: the token
// is read back from its Secret. An error wrapping fs.ErrNotExist when
// there is none.
func (b *Backend) Open(ctx context.Context, name string) (backend.Instance, error) {
	if err := backend.CheckName(name); err != nil {
		return nil, err
	}
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	sel := labels.Set{LabelManaged: managedBy, LabelGuest: name}.String()
	list, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes guest %q: %w", name, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("kubernetes guest %q: no Pod labelled %s in namespace %s: %w", name, sel, c.namespace, fs.ErrNotExist)
	case 1:
	default:
		return nil, fmt.Errorf("kubernetes guest %q: %d Pods carry its label in namespace %s", name, len(list.Items), c.namespace)
	}
	po := &list.Items[0]
	p := &pod{cli: c, namespace: c.namespace, name: po.Name}
	sec, err := c.set.CoreV1().Secrets(c.namespace).Get(ctx, po.Name, metav1.GetOptions{})
	if err != nil {
		return nil, p.errorf("read its token: %w", err)
	}
	if err := p.keepToken(strings.TrimSpace(string(sec.Data[tokenName]))); err != nil {
		return nil, err
	}
	inst := newInstance(p, name, po.Labels[LabelApps], backend.Outputs{})
	inst.Desc.Started = po.CreationTimestamp.UTC()
	return inst, nil
}

// List names the named guests whose Pods are in the namespace, sorted.
func (b *Backend) List(ctx context.Context) ([]string, error) {
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	list, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + managedBy + "," + LabelGuest})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list guests: %w", err)
	}
	var names []string
	for _, po := range list.Items {
		names = append(names, po.Labels[LabelGuest])
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// instance is a guest Pod.
type instance struct {
	backend.ImageInstance
	p *pod
}

func newInstance(p *pod, name, apps string, out backend.Outputs) *instance {
	where := p.namespace + "/" + p.name
	return &instance{p: p, ImageInstance: backend.ImageInstance{Files: p, Desc: backend.Description{
		Name: name, Backend: "kubernetes", Display: "inside the Pod",
		// Not dialable: agentd is reached through DialAgentd.
		Addr:      "kubernetes:" + where + ":" + strconv.Itoa(agentdPort),
		TokenFile: p.tokenFile, Instance: where, Owner: "pod " + where, Home: DefaultHome, Apps: apps,
		Outputs: out.InGuest("pod", DefaultHome), Started: time.Now().UTC(),
	}}}
}

// DialAgentd connects to agentd through the API server's port-forward. The
// connection ends with an error naming the Pod when the Pod is deleted,
// evicted or its container ends.
func (i *instance) DialAgentd(ctx context.Context) (net.Conn, error) { return i.p.forward(ctx, true) }

// Status asks the API server whether the Pod runs and agentd whether it is
// healthy.
func (i *instance) Status(ctx context.Context) backend.Status {
	po, err := i.p.get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return backend.Status{Health: "the Pod is gone"}
	case err != nil:
		return backend.Status{Health: err.Error()}
	}
	if why := stopped(po); why != "" {
		return backend.Status{Health: why}
	}
	if po.Status.Phase != corev1.PodRunning {
		return backend.Status{Health: describe(po)}
	}
	return backend.Status{Running: true, Health: healthz.Describe(i.p.healthz(ctx))}
}

// StartMilestones says where the start's time went.
func (i *instance) StartMilestones(ctx context.Context) ([]backend.Milestone, error) {
	return i.p.StartMilestones(ctx)
}

func (i *instance) Down(ctx context.Context) error { return i.p.Down(ctx) }

// Close releases nothing: the client holds no connection between calls.
func (i *instance) Close() error { return nil }
