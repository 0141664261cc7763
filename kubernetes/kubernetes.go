// Package kubernetes runs agentd guests as Pods on a Kubernetes cluster
// (docs/design.md, "Kubernetes guests"), through client-go: a guest is one
// Pod running the guest image (docker/Dockerfile) with the Docker guest's
// hardening as Kubernetes expresses it, so that a namespace enforcing Pod
// Security "restricted" admits it:
//
//   - the image's non-root user (runAsNonRoot, runAsUser/Group 1000), every
//     capability dropped, no privilege escalation, the RuntimeDefault
//     seccomp profile (a Localhost profile for --browser, whose Chromium
//     sandbox needs user namespaces), a read-only root filesystem with
//     memory-backed emptyDirs where the desktop writes (/tmp, the home,
//     /dev/shm, agentd's private directory), no service account token,
//     CPU, memory and ephemeral-storage requests and limits;
//   - agentd's token in a Secret of its own, which only an init container
//     mounts, copying it into agentd's private directory as agentd wants it
//     (0600, its user's); the entrypoint closes that directory to the
//     desktop's applications;
//   - no Service and no exposed port: agentd listens on the pod's loopback
//     and is reached through the API server's port-forward (DialAgentd);
//   - a NetworkPolicy selecting the pod that denies all ingress, and all
//     egress too unless the guest has a network (Spec.Network);
//   - a readiness probe on agentd's /healthz (the image's healthcheck), so
//     the API server knows when the desktop is ready.
//
// Everything a guest creates carries the label LabelManaged and is owned by
// its Pod, so the garbage collector removes the rest when the Pod vanishes;
// Down removes it all itself and waits until the Pod is gone.
package kubernetes

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults for zero Options.
const (
	// DefaultNamespace is the namespace guests go to when none is named;
	// agentctl creates it, enforcing Pod Security "restricted".
	DefaultNamespace = "agentd"
	DefaultImage     = "agentd-guest"
	// DefaultStartTimeout bounds Up from creating the Pod to agentd
	// answering.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultHome and DefaultUID are the guest image's user (USER 1000:1000,
	// HOME /home/agent in docker/Dockerfile): a Pod cannot read them from
	// the image as the Docker engine can.
	DefaultHome = "/home/agent"
	DefaultUID  = 1000
)

// Labels on everything a guest creates.
const (
	// LabelManaged ("app.kubernetes.io/managed-by": "agentd") marks every
	// object, so leftovers can be found with a selector.
	LabelManaged = "app.kubernetes.io/managed-by"
	managedBy    = "agentd"
	// LabelGuest holds a named guest's name: how another process finds it.
	LabelGuest = "agentd.dev/guest"
	// LabelPod holds the Pod's own name, for the NetworkPolicy's selector.
	LabelPod = "agentd.dev/pod"
	// LabelApps holds the desktop's name (Description.Apps), for Open.
	LabelApps = "agentd.dev/apps"
)

// Options are the backend's settings beyond a Spec: which cluster and
// namespace, which image, and the Pod's resources.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG, else
	// ~/.kube/config, else the in-cluster configuration.
	Kubeconfig string
	// Context is the kubeconfig's context; empty: its current one.
	Context string
	// Namespace is where guests go. Empty: DefaultNamespace, created with
	// the label pod-security.kubernetes.io/enforce=restricted when missing;
	// a namespace named here is used as it is.
	Namespace string
	// Image is the guest image; PullPolicy its imagePullPolicy (Always,
	// IfNotPresent or Never; empty: Kubernetes' default for the tag).
	Image      string
	PullPolicy string
	// RuntimeClass, if set, is the Pod's runtimeClassName (gVisor, Kata).
	RuntimeClass string
	// SeccompProfile is a Localhost seccomp profile, relative to the
	// kubelet's seccomp directory, for guests with the browser
	// (Spec.Browser): Chromium's sandbox needs clone and unshare with new
	// user namespaces, which RuntimeDefault refuses (docker.BrowserSeccomp
	// is such a profile). Without the browser, RuntimeDefault.
	SeccompProfile string
	// Requests and Limits replace the Pod's defaults (DefaultRequests,
	// DefaultLimits) resource by resource.
	Requests, Limits corev1.ResourceList
	// StartTimeout bounds Up. Default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Backend is the Kubernetes guest as a backend.Backend ("kubernetes"). Its
// Options are set by flags (RegisterFlags) or directly; the client is made
// on first use.
type Backend struct {
	Options Options
	// extraLabels go on the Pods Up starts (a pool's).
	extraLabels map[string]string
	// simulated, set by the scale simulation only, places each Pod on
	// kwok's simulated nodes (a node selector and a toleration); Up then
	// waits for the Ready that kwok reports instead of for agentd, which
	// no simulated node runs.
	simulated func(*corev1.PodSpec)

	mu  sync.Mutex
	cli *clients
}

// clients are what a Backend talks to the cluster with.
type clients struct {
	config *rest.Config
	set    k8s.Interface
	// namespace is Options.Namespace or DefaultNamespace.
	namespace string
}

// RegisterFlags adds the backend's flags to fs.
func (b *Backend) RegisterFlags(fs *flag.FlagSet) {
	o := &b.Options
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubernetes guests: kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else the in-cluster configuration)")
	fs.StringVar(&o.Context, "context", "", "kubernetes guests: the kubeconfig's context (default its current one)")
	fs.StringVar(&o.Namespace, "namespace", "", "kubernetes guests: namespace, used as it is (default "+DefaultNamespace+", created enforcing Pod Security restricted)")
	fs.StringVar(&o.Image, "image", "", "kubernetes guests: the guest image (default "+DefaultImage+")")
	fs.StringVar(&o.PullPolicy, "image-pull-policy", "", "kubernetes guests: Always, IfNotPresent or Never (default Kubernetes' for the tag)")
	fs.StringVar(&o.RuntimeClass, "runtime-class", "", "kubernetes guests: the Pod's RuntimeClass (gVisor, Kata; default the cluster's)")
	fs.StringVar(&o.SeccompProfile, "seccomp-profile", "", "kubernetes guests with --browser: a Localhost seccomp profile on the nodes allowing Chromium's sandbox (see README)")
}

// connect returns the backend's clients, made once.
func (b *Backend) connect() (*clients, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cli != nil {
		return b.cli, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = b.Options.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: b.Options.Context}
	// The deferred loader falls back to the in-cluster configuration when
	// no kubeconfig is found.
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: configuration: %w", err)
	}
	// client-go's default of 5 requests a second would pace a claim race
	// and a start's polling; the API server's own limits still apply.
	config.QPS, config.Burst = 50, 100
	config.UserAgent = "agentctl"
	set, err := k8s.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: client: %w", err)
	}
	ns := b.Options.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	b.cli = &clients{config: config, set: set, namespace: ns}
	return b.cli, nil
}

// ensureNamespace creates the default namespace, enforcing Pod Security
// "restricted", when it is missing; a namespace the user named is never
// created or changed.
func (b *Backend) ensureNamespace(ctx context.Context, c *clients) error {
	if b.Options.Namespace != "" {
		return nil
	}
	_, err := c.set.CoreV1().Namespaces().Get(ctx, c.namespace, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: namespace %s: %w", c.namespace, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: c.namespace,
		Labels: map[string]string{
			LabelManaged:                         managedBy,
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		},
	}}
	_, err = c.set.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubernetes: create namespace %s: %w", c.namespace, err)
	}
	return nil
}

// ErrNoCluster is wrapped by errors that come from not reaching the API
// server at all.
var ErrNoCluster = errors.New("kubernetes API server unreachable")

// Ping checks that the API server answers, for tests and 'agentctl guest
// up' to fail early.
func (b *Backend) Ping(ctx context.Context) error {
	c, err := b.connect()
	if err != nil {
		return err
	}
	res := c.set.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
	if err := res.Error(); err != nil {
		return fmt.Errorf("kubernetes: %w: %w", ErrNoCluster, err)
	}
	return nil
}
