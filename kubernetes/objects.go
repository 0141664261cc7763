package kubernetes

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Inside the Pod; docker/entrypoint.sh and healthcheck.sh use the same.
const (
	containerName = "guest"
	runDir        = "/run/agentd"        // agentd's private directory
	secretDir     = "/run/agentd-secret" // the token's Secret, in the init container only
	tokenName     = "token"
	configDir     = "/run/agentd/config"
	agentdPort    = 7010 // AGENTD_LISTEN, on the Pod's loopback
	healthcheck   = "/opt/agentd/healthcheck.sh"
	// maxConfig bounds a desktop's configuration: it travels in a
	// ConfigMap, which holds at most 1 MiB.
	maxConfig = 900 << 10
)

// DefaultRequests and DefaultLimits are the guest Pod's resources: a
// desktop idles at well under its request, Firefox with a few tabs stays
// under the memory limit (as the Docker guest's 2 GiB), and the tmpfs
// volumes count against memory.
var (
	DefaultRequests = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("250m"),
		corev1.ResourceMemory:           resource.MustParse("512Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("256Mi"),
	}
	DefaultLimits = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           resource.MustParse("2Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
)

// podConfig is one guest's Pod, as Up builds it.
type podConfig struct {
	name, namespace string
	labels          map[string]string
	opts            Options
	width, height   int
	apps            []string
	url, file       string
	configItems     []corev1.KeyToPath // the ConfigMap's files; none: no configuration
	code, browser   bool
}

// objectMeta is the metadata of every object of the guest: named after
// the Pod, with its labels.
func (p podConfig) objectMeta() metav1.ObjectMeta {
	labels := map[string]string{}
	for k, v := range p.labels {
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, Labels: labels}
}

// pod is the guest's whole Pod; every hardening setting is here.
func (p podConfig) pod() *corev1.Pod {
	uid := int64(DefaultUID)
	env := []corev1.EnvVar{
		{Name: "SCREEN_SIZE", Value: fmt.Sprintf("%dx%d", p.width, p.height)},
		{Name: "GUEST_APPS", Value: strings.Join(p.apps, " ")},
		{Name: "AGENTD_LISTEN", Value: "127.0.0.1:" + strconv.Itoa(agentdPort)},
	}
	if p.url != "" {
		env = append(env, corev1.EnvVar{Name: "GUEST_URL", Value: p.url})
	}
	if p.file != "" {
		env = append(env, corev1.EnvVar{Name: "GUEST_FILE", Value: p.file})
	}
	if len(p.configItems) > 0 {
		env = append(env, corev1.EnvVar{Name: "GUEST_CONFIG_DIR", Value: configDir})
	}
	if p.code {
		env = append(env, corev1.EnvVar{Name: "AGENTD_CODE", Value: "1"})
	}
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if p.browser {
		env = append(env, corev1.EnvVar{Name: "AGENTD_BROWSER", Value: "1"})
		profile := p.opts.SeccompProfile
		seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile}
	}
	image := p.opts.Image
	if image == "" {
		image = DefaultImage
	}
	mem := corev1.StorageMediumMemory
	tmpfs := func(name, size string) corev1.Volume {
		q := resource.MustParse(size)
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: mem, SizeLimit: &q}}}
	}
	// The Secret's file is read-only, 0400, and the fsGroup's: the kubelet
	// adds group read for it, and agentd refuses a token others than its
	// user may read. So an init container, the Pod's one user too, copies
	// it into agentd's private directory as agentd wants it (0600, its
	// user's), and the desktop's container never mounts the Secret.
	tokenMode := int32(0o400)
	volumes := []corev1.Volume{
		tmpfs("tmp", "512Mi"),
		tmpfs("home", "1Gi"),
		tmpfs("shm", "256Mi"), // the Docker guest's --shm-size: Firefox's and Chromium's shared memory
		tmpfs("run", "16Mi"),  // agentd's private directory: its socket and address file
		{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: p.name, DefaultMode: &tokenMode,
			Items: []corev1.KeyToPath{{Key: tokenName, Path: tokenName}},
		}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "home", MountPath: DefaultHome},
		{Name: "shm", MountPath: "/dev/shm"},
		{Name: "run", MountPath: runDir},
	}
	if len(p.configItems) > 0 {
		volumes = append(volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.name}, Items: p.configItems,
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "config", MountPath: configDir, ReadOnly: true})
	}
	resources := corev1.ResourceRequirements{Requests: merge(DefaultRequests, p.opts.Requests), Limits: merge(DefaultLimits, p.opts.Limits)}
	var runtimeClass *string
	if p.opts.RuntimeClass != "" {
		runtimeClass = &p.opts.RuntimeClass
	}
	hardened := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			Privileged:               ptr(false),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			RunAsNonRoot:             ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	grace := int64(10) // the entrypoint gives each child 2 s
	return &corev1.Pod{
		ObjectMeta: p.objectMeta(),
		Spec: corev1.PodSpec{
			// A guest whose desktop died is dead, as a Docker guest is:
			// nothing restarts behind a run's back.
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			TerminationGracePeriodSeconds: &grace,
			// The pause container becomes PID 1 and reaps the browser's
			// orphaned helpers, as docker run --init does.
			ShareProcessNamespace: ptr(true),
			RuntimeClassName:      runtimeClass,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      &uid,
				RunAsGroup:     &uid,
				FSGroup:        &uid,
				SeccompProfile: seccomp,
			},
			InitContainers: []corev1.Container{{
				Name:            "token",
				Image:           image,
				ImagePullPolicy: corev1.PullPolicy(p.opts.PullPolicy),
				Command:         []string{"install", "-m", "0600", path.Join(secretDir, tokenName), path.Join(runDir, tokenName)},
				Resources:       resources,
				SecurityContext: hardened(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "run", MountPath: runDir},
					{Name: "token", MountPath: secretDir, ReadOnly: true},
				},
			}},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           image,
				ImagePullPolicy: corev1.PullPolicy(p.opts.PullPolicy),
				Env:             env,
				Resources:       resources,
				VolumeMounts:    mounts,
				SecurityContext: hardened(),
				// The image's healthcheck asks agentd's /healthz on the
				// Pod's loopback: agentd listens nowhere else.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{healthcheck}}},
					PeriodSeconds:    2,
					TimeoutSeconds:   5,
					FailureThreshold: 3,
				},
			}},
			Volumes: volumes,
		},
	}
}

// merge is base with over's resources replacing base's.
func merge(base, over corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// secret holds the token.
func (p podConfig) secret(token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: p.objectMeta(),
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr(true),
		Data:       map[string][]byte{tokenName: []byte(token + "\n")},
	}
}

// networkPolicy selects the guest's Pod and denies it all ingress, and all
// egress unless it has a network. The API server's port-forward reaches
// agentd through the kubelet and the runtime, not the Pod's network, so it
// is not affected.
func (p podConfig) networkPolicy(network bool) *networkingv1.NetworkPolicy {
	types := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if !network {
		types = append(types, networkingv1.PolicyTypeEgress)
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: p.objectMeta(),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: p.name}},
			PolicyTypes: types,
			// No rules: nothing is allowed in the directions above.
		},
	}
}

// configMap carries a desktop's configuration directory (window manager
// rules, browser profile, editor settings): each file a key, put back at
// its path by the volume's items. Nil when dir is empty.
func (p podConfig) configMap(dir string) (*corev1.ConfigMap, []corev1.KeyToPath, error) {
	cm := &corev1.ConfigMap{ObjectMeta: p.objectMeta(), Immutable: ptr(true), BinaryData: map[string][]byte{}}
	var items []corev1.KeyToPath
	total := 0
	err := filepath.WalkDir(dir, func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", file)
		}
		rel, err := filepath.Rel(dir, file)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if total += len(data); total > maxConfig {
			return fmt.Errorf("the configuration is over %d KiB", maxConfig>>10)
		}
		key := "f" + strconv.Itoa(len(items))
		cm.BinaryData[key] = data
		items = append(items, corev1.KeyToPath{Key: key, Path: filepath.ToSlash(rel)})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("desktop configuration: %w", err)
	}
	return cm, items, nil
}

func ptr[T any](v T) *T { return &v }
