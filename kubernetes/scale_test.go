package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/k8stest"
	"github.com/agentd-dev/agentd/internal/percentile"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
)

// The pool's scale simulation (docs/design.md, "Kubernetes guests"): kwok
// (sigs.k8s.io/kwok, built from the Go module proxy) fakes simNodes nodes on
// the test cluster's own API server, so that the scheduler places pool
// Pods on them and kwok reports them Running and Ready, with no container
// anywhere. The pool is filled by the backend's own Offer and emptied by
// simClaimers concurrent claimers calling the Claim a run calls, each in a
// Backend of its own (as on separate machines), each of its requests
// counted by a transport wrapped around its client's.
const (
	kwokModule  = "sigs.k8s.io/kwok"
	kwokVersion = "v0.8.0"
	simNodes    = 100
	simClaimers = 50
	// simOfferers fill the pool at once, as that many keepers would.
	simOfferers = 50
	// kwok manages the nodes with this annotation only (the real node
	// stays its kubelet's); the same key is their taint, which keeps
	// every other Pod off them.
	simKey   = "kwok.x-k8s.io/node"
	simValue = "fake"
	// simNodeLabel marks the simulated nodes, for the pool Pods' node
	// selector and the cleanup.
	simNodeLabel = "agentd.dev/sim-node"
)

// placeOnKwok is the only change the simulation makes to a pool Pod.
func placeOnKwok(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{simNodeLabel: "true"}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: simKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}

// TestScaleSim measures the claim at pool sizes AGENTD_K8S_SCALE names
// (1: 100 and 1,000 guests): its latency (p50, p99) and its API requests,
// conflicts and bytes read. Each Pod must be claimed exactly once.
//
//	AGENTD_K8S_SCALE=1 go test -run TestScaleSim -v -timeout 60m ./kubernetes/
func TestScaleSim(t *testing.T) {
	sizes, err := simSizes(prereq.OptIn(t, "AGENTD_K8S_SCALE", "the pool's scale simulation (minutes: kwok's 100 nodes, pools of 100 and 1,000 guests, 50 claimers); a list of pool sizes, or 1 for 100,1000"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := k8stest.Kubeconfig(t)
	bin, stages := buildKwok(t)
	admin := simAdmin(t, kubeconfig)
	startKwok(t, bin, stages, kubeconfig)
	createNodes(t, admin)
	ns := createNamespace(t, admin)
	var lines []string
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			lines = append(lines, simulate(t, kubeconfig, ns, n))
		})
	}
	t.Logf("load average %s; %d simulated nodes, %d claimers:\n%s", loadAverage(), simNodes, simClaimers, strings.Join(lines, "\n"))
}

// simSizes reads AGENTD_K8S_SCALE.
func simSizes(v string) ([]int, error) {
	if v == "1" {
		return []int{100, 1000}, nil
	}
	var sizes []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("AGENTD_K8S_SCALE=%q: want 1 or pool sizes such as 100,1000", v)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// buildKwok returns kwok's binary ($AGENTD_KWOK, else built once from the
// Go module proxy into the user's cache) and the stage files its module
// ships that make nodes Ready, keep them so and run, ready and delete
// their Pods.
func buildKwok(t *testing.T) (bin string, stages []string) {
	t.Helper()
	goCmd := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		// Outside this module: kwok is no dependency of agentd.
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(goCmd("mod", "download", "-json", kwokModule+"@"+kwokVersion), &mod); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"node/fast", "node/heartbeat", "pod/fast"} {
		files, err := filepath.Glob(filepath.Join(mod.Dir, "kustomize/stage", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f) != "kustomization.yaml" {
				stages = append(stages, f)
			}
		}
	}
	if bin = os.Getenv("AGENTD_KWOK"); bin != "" {
		return bin, stages
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(cache, "agentd-kwok", kwokVersion)
	bin = filepath.Join(gobin, "kwok")
	if _, err := os.Stat(bin); err != nil {
		begun := time.Now()
		cmd := exec.Command("go", "install", kwokModule+"/cmd/kwok@"+kwokVersion)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "GOBIN="+gobin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build kwok: go install %s/cmd/kwok@%s: %v\n%s", kwokModule, kwokVersion, err, out)
		}
		t.Logf("built kwok %s in %.0fs", kwokVersion, time.Since(begun).Seconds())
	}
	return bin, stages
}

// simAdmin is a client for the simulation's own objects (nodes, the
// namespace), not limited by client-go's default pace.
func simAdmin(t *testing.T, kubeconfig string) k8s.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = 200, 400
	set, err := k8s.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// startKwok runs kwok on the simulated nodes until the test's end.
func startKwok(t *testing.T, bin string, stages []string, kubeconfig string) {
	t.Helper()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + simKey + "=" + simValue,
		// Pod IPs for the pool, which kwok's default /24 is too small for;
		// nothing routes them.
		"--cidr=10.200.0.0/16",
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	logFile := filepath.Join(t.TempDir(), "kwok.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("start kwok: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		defer log.Close()
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			if data, err := os.ReadFile(logFile); err == nil {
				t.Logf("kwok's log, last lines:\n%s", lastLines(string(data), 30))
			}
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// createNodes creates the simulated nodes, each with room for 20 guests
// at the default requests, and waits until kwok reports them Ready; they
// are deleted at the test's end.
func createNodes(t *testing.T, admin k8s.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sel := simNodeLabel + "=true"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
			t.Errorf("delete the simulated nodes: %v", err)
		}
	})
	room := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("20"),
	}
	for i := range simNodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("agentd-sim-%03d", i),
				Labels:      map[string]string{simNodeLabel: "true", LabelManaged: managedBy},
				Annotations: map[string]string{simKey: simValue},
			},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: simKey, Value: simValue, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: room, Allocatable: room},
		}
		if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", node.Name, err)
		}
	}
	begun := time.Now()
	for {
		list, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready == simNodes {
			t.Logf("%d simulated nodes Ready in %.1fs", simNodes, time.Since(begun).Seconds())
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d simulated nodes Ready: %v", ready, simNodes, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// createNamespace makes the simulation's namespace, enforcing Pod
// Security restricted as agentctl's own; at the test's end it is deleted
// with what is left in it, and the claimers' token copies with it.
func createNamespace(t *testing.T, admin k8s.Interface) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "agentd-scale-" + randhex.String(3)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		LabelManaged: managedBy, "pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if root, err := stateRoot(); err == nil {
			dirs, _ := filepath.Glob(filepath.Join(root, name+".*"))
			for _, d := range dirs {
				os.RemoveAll(d)
			}
		}
		if err := admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
			return
		}
		for {
			_, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			select {
			case <-ctx.Done():
				t.Errorf("namespace %s still there: %v", name, ctx.Err())
				return
			case <-time.After(time.Second):
			}
		}
	})
	return name
}

// claimResult is one claim's outcome and cost.
type claimResult struct {
	inst  backend.Instance
	err   error
	took  time.Duration
	calls calls
}

// simulate fills a pool of n guests, claims them all with simClaimers
// claimers, checks that each Pod was claimed once, takes every guest down
// as a run would, and returns the figures.
func simulate(t *testing.T, kubeconfig, ns string, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	opts := Options{Kubeconfig: kubeconfig, Namespace: ns, Image: k8stest.Image, PullPolicy: "Never"}
	spec := backend.Spec{Width: 640, Height: 480}
	key := backend.KeyOf("kubernetes", spec)

	begun := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	offerErrs := make([]error, n)
	for range min(simOfferers, n) {
		wg.Go(func() {
			b := &Backend{Options: opts, simulated: placeOnKwok}
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				offerErrs[i] = b.Offer(ctx, spec)
			}
		})
	}
	wg.Wait()
	fill := time.Since(begun)
	results := make([]claimResult, n)
	// Whatever happens next, the guests go.
	defer func() {
		begun := time.Now()
		var down atomic.Int64
		for range simClaimers {
			wg.Go(func() {
				for i := int(down.Add(1) - 1); i < n; i = int(down.Add(1) - 1) {
					if inst := results[i].inst; inst != nil {
						if err := inst.Down(ctx); err != nil {
							t.Errorf("down: %v", err)
						}
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d guests down in %.1fs", n, time.Since(begun).Seconds())
	}()
	for i, err := range offerErrs {
		if err != nil {
			t.Fatalf("offer %d of %d: %v", i+1, n, err)
		}
	}
	t.Logf("pool of %d filled in %.1fs by %d offerers", n, fill.Seconds(), min(simOfferers, n))

	begun = time.Now()
	next.Store(0)
	start := make(chan struct{})
	for range simClaimers {
		wg.Go(func() {
			var count counter
			c := &Backend{Options: opts}
			if err := c.countCalls(&count); err != nil {
				t.Error(err)
				return
			}
			<-start
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				before := count.now()
				t0 := time.Now()
				inst, err := c.Claim(ctx, key)
				results[i] = claimResult{inst: inst, err: err, took: time.Since(t0), calls: count.now().minus(before)}
			}
		})
	}
	close(start)
	wg.Wait()
	elapsed := time.Since(begun)

	// Exactly once: every claim got a guest, and no two the same.
	byPod := map[string]int{}
	var took []time.Duration
	var total calls
	maxRequests := 0
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("claim %d: %v", i, r.err)
			continue
		case r.inst == nil:
			t.Errorf("claim %d found no guest, though as many were offered as claimed", i)
			continue
		}
		byPod[r.inst.(*instance).p.name]++
		took = append(took, r.took)
		total = total.plus(r.calls)
		maxRequests = max(maxRequests, r.calls.Requests)
	}
	for name, k := range byPod {
		if k != 1 {
			t.Errorf("pod %s claimed %d times", name, k)
		}
	}
	if len(byPod) != n {
		t.Errorf("%d distinct pods claimed, want %d", len(byPod), n)
	}
	c := &Backend{Options: opts}
	if _, err := c.connect(); err != nil {
		t.Fatal(err)
	}
	left, err := c.cli.set.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelPool: PoolHash(key), LabelClaim: unclaimed}.String()})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("unclaimed pods left: %d, %v", len(left.Items), err)
	}
	if len(took) == 0 {
		t.Fatal("no claim succeeded")
	}
	slices.Sort(took)
	per := func(v int) float64 { return float64(v) / float64(len(took)) }
	line := fmt.Sprintf("%5d guests (pool filled in %.0fs): %d claims in %.1fs; latency p50 %v, p99 %v, max %v; "+
		"API requests per claim %.2f (max %d): LIST %.2f, PATCH %.2f, GET %.2f, of which 409 Conflict %.2f; %.0f KiB read per claim",
		n, fill.Seconds(), len(took), elapsed.Seconds(),
		percentile.NearestRank(took, 50).Round(time.Millisecond), percentile.NearestRank(took, 99).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond),
		per(total.Requests), maxRequests, per(total.Lists), per(total.Patches), per(total.Gets), per(total.Conflicts), per(int(total.Bytes>>10)))
	t.Log(line)
	return line
}

// calls counts a client's API requests.
type calls struct {
	Requests, Lists, Gets, Patches, Conflicts int
	// Bytes are the response bodies' bytes read.
	Bytes int64
}

func (a calls) plus(b calls) calls {
	return calls{a.Requests + b.Requests, a.Lists + b.Lists, a.Gets + b.Gets, a.Patches + b.Patches, a.Conflicts + b.Conflicts, a.Bytes + b.Bytes}
}

func (a calls) minus(b calls) calls {
	return calls{a.Requests - b.Requests, a.Lists - b.Lists, a.Gets - b.Gets, a.Patches - b.Patches, a.Conflicts - b.Conflicts, a.Bytes - b.Bytes}
}

// counter is calls as a client's transport counts them.
type counter struct {
	requests, lists, gets, patches, conflicts, bytes atomic.Int64
}

func (c *counter) now() calls {
	return calls{int(c.requests.Load()), int(c.lists.Load()), int(c.gets.Load()), int(c.patches.Load()), int(c.conflicts.Load()), c.bytes.Load()}
}

// countingTransport counts each request through next: a GET of a
// collection (a path ending in the resource's plural, such as
// .../pods) is a LIST, and a 409 answer a conflict.
type countingTransport struct {
	next http.RoundTripper
	n    *counter
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct.n.requests.Add(1)
	switch req.Method {
	case http.MethodGet:
		if collection(req.URL.Path) {
			ct.n.lists.Add(1)
		} else {
			ct.n.gets.Add(1)
		}
	case http.MethodPatch:
		ct.n.patches.Add(1)
	}
	resp, err := ct.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusConflict {
		ct.n.conflicts.Add(1)
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &ct.n.bytes}
	return resp, nil
}

// collection reports whether an API path names a namespaced collection:
// /api/v1/namespaces/NS/RESOURCE, with no object name after it.
func collection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	return i >= 0 && len(parts) == i+3
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// countCalls makes b's client count its requests into n: the same
// configuration connect makes (its pace, its user agent), with the
// counting transport around its own.
func (b *Backend) countCalls(n *counter) error {
	c, err := b.connect()
	if err != nil {
		return err
	}
	config := rest.CopyConfig(c.config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, n: n} })
	set, err := k8s.NewForConfig(config)
	if err != nil {
		return err
	}
	b.cli = &clients{config: config, set: set, namespace: c.namespace}
	return nil
}

// TestCountingTransport: the simulation's counts are what a server saw.
func TestCountingTransport(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "conflict" {
			w.WriteHeader(http.StatusConflict)
		}
		k, _ := io.WriteString(w, `{"path":"`+r.URL.Path+`"}`)
		served.Add(int64(k))
	}))
	defer srv.Close()
	var n counter
	client := &http.Client{Transport: &countingTransport{next: http.DefaultTransport, n: &n}}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/ns/pods"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/p1"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/p1?conflict"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/p2"},
		{http.MethodGet, "/api/v1/namespaces/ns/secrets/p2"},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := calls{Requests: 5, Lists: 1, Gets: 2, Patches: 2, Conflicts: 1, Bytes: served.Load()}
	if got := n.now(); got != want {
		t.Errorf("counted %+v, want %+v", got, want)
	}
	if d := n.now().minus(calls{Requests: 2, Lists: 1}); d.Requests != 3 || d.Lists != 0 {
		t.Errorf("minus: %+v", d)
	}
}
