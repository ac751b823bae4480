// A node agent's side of the engine API, in Go (an agent such as Koordinator's koordlet):
// pods through `nrirp run --engine-api` on a unix socket, with stubs generated from
// src/nrirp/adapters/engine_api/proto/engine.proto (package enginev1, see README.md).
//
//	nrirp run --engine-api --policy topology-aware --engine-socket /tmp/engine.sock &
//	go run . /tmp/engine.sock
//
// It does what examples/engine_api/client.py does and prints the same lines: a BestEffort
// pod, a Guaranteed one of 2 CPUs (whose exclusive CPUs shrink the first one's shared pool:
// an update in the reply), one too big to fit (refused with FAILED_PRECONDITION; the
// policy's explanation of why), the Guaranteed pod's removal, then a reconfiguration (CPU 4
// reserved: the shared pool's update comes through TakeUpdates) and a configuration that is
// refused. The agent would apply each adjustment and update to its runtime.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"nrirp.example/engineclient/enginev1"
)

const (
	cpuPeriod    = 100000
	memoryLimit  = 64 << 20
	minCPUShares = 2
)

// kubePod is a pod of one container "app" as the kubelet would hand it to the runtime:
// Guaranteed with cpuMilli CPUs requested and limited, or BestEffort when cpuMilli is 0.
func kubePod(name string, cpuMilli int64) (*enginev1.Pod, *enginev1.Container) {
	uid := "uid-" + name
	labels := map[string]string{
		"io.kubernetes.pod.name":      name,
		"io.kubernetes.pod.namespace": "demo",
		"io.kubernetes.pod.uid":       uid,
	}
	resources := &enginev1.Resources{
		CpuShares: proto.Int64(minCPUShares),
		CpuPeriod: proto.Int64(cpuPeriod),
	}
	parent := "/kubepods/besteffort/pod" + uid
	oomScoreAdj := int64(1000)
	if cpuMilli > 0 {
		resources.CpuShares = proto.Int64(max(cpuMilli*1024/1000, minCPUShares))
		resources.CpuQuota = proto.Int64(cpuMilli * cpuPeriod / 1000)
		resources.MemoryLimit = proto.Int64(memoryLimit)
		parent = "/kubepods/pod" + uid
		oomScoreAdj = -997
	}
	pod := &enginev1.Pod{
		Id:           "sandbox-" + name,
		Name:         name,
		Uid:          uid,
		Namespace:    "demo",
		Labels:       labels,
		CgroupParent: parent,
		Resources:    resources,
	}
	containerLabels := map[string]string{"io.kubernetes.container.name": "app"}
	for key, value := range labels {
		containerLabels[key] = value
	}
	container := &enginev1.Container{
		Id:          name + "-app",
		PodId:       pod.Id,
		Name:        "app",
		Labels:      containerLabels,
		Resources:   resources,
		OomScoreAdj: proto.Int64(oomScoreAdj),
		CgroupsPath: parent + "/" + name + "-app",
	}
	return pod, container
}

func show(updates []*enginev1.Update) {
	for _, update := range updates {
		fmt.Printf("  update %s: cpus=%s\n", update.ContainerId, update.Resources.GetCpus())
	}
}

// explain prints the policy's account of its decision for a container (docs/explain.md).
func explain(ctx context.Context, engine enginev1.EngineClient, container string) error {
	reply, err := engine.Explain(ctx, &enginev1.ExplainRequest{Container: container})
	if err != nil {
		return fmt.Errorf("Explain %s: %w", container, err)
	}
	var why struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(reply.ExplanationJson), &why); err != nil {
		return fmt.Errorf("Explain %s: %w", container, err)
	}
	fmt.Printf("  explain: %s: %s\n", why.Verdict, why.Summary)
	return nil
}

// withState is the container as the runtime reports it in a later event.
func withState(container *enginev1.Container, state enginev1.ContainerState) *enginev1.Container {
	later := proto.Clone(container).(*enginev1.Container)
	later.State = state
	return later
}

func startPod(ctx context.Context, engine enginev1.EngineClient, name string, cpuMilli int64) error {
	pod, container := kubePod(name, cpuMilli)
	if _, err := engine.RunPodSandbox(ctx, &enginev1.PodRequest{Pod: pod}); err != nil {
		return fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	reply, err := engine.CreateContainer(ctx, &enginev1.ContainerRequest{Pod: pod, Container: container})
	if status.Code(err) == codes.FailedPrecondition { // refused: fail the container's creation
		fmt.Printf("CreateContainer %s: refused: %s\n", name, status.Convert(err).Message())
		return explain(ctx, engine, "demo/"+name+"/app")
	}
	if err != nil {
		return fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	fmt.Printf("CreateContainer %s: cpus=%s\n", name, reply.Adjustment.Resources.GetCpus())
	show(reply.Updates)
	created := withState(container, enginev1.ContainerState_CONTAINER_STATE_CREATED)
	running := withState(container, enginev1.ContainerState_CONTAINER_STATE_RUNNING)
	for _, call := range []struct {
		what string
		do   func(context.Context, *enginev1.ContainerRequest, ...grpc.CallOption) (*enginev1.Updates, error)
		ctr  *enginev1.Container
	}{
		{"PostCreateContainer", engine.PostCreateContainer, created},
		{"StartContainer", engine.StartContainer, created},
		{"PostStartContainer", engine.PostStartContainer, running},
	} {
		if _, err := call.do(ctx, &enginev1.ContainerRequest{Pod: pod, Container: call.ctr}); err != nil {
			return fmt.Errorf("%s %s: %w", call.what, name, err)
		}
	}
	return nil
}

func run(socketPath string) error {
	conn, err := grpc.NewClient("unix:"+socketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	engine := enginev1.NewEngineClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// the daemon may still be starting: wait for its socket to answer (10 s at most)
	ready, readyCancel := context.WithTimeout(ctx, 10*time.Second)
	described, err := engine.Describe(ready, &enginev1.DescribeRequest{}, grpc.WaitForReady(true))
	readyCancel()
	if err != nil {
		return fmt.Errorf("Describe: %w", err)
	}
	fmt.Printf("engine: policy %s\n", described.Policy)
	for _, pod := range []struct {
		name     string
		cpuMilli int64
	}{{"shared", 0}, {"exclusive", 2000}, {"too-big", 64000}} {
		if err := startPod(ctx, engine, pod.name, pod.cpuMilli); err != nil {
			return err
		}
	}
	pod, _ := kubePod("exclusive", 2000)
	fmt.Println("RemovePodSandbox exclusive")
	stopped, err := engine.StopPodSandbox(ctx, &enginev1.PodRequest{Pod: pod})
	if err != nil {
		return fmt.Errorf("StopPodSandbox: %w", err)
	}
	removed, err := engine.RemovePodSandbox(ctx, &enginev1.PodRequest{Pod: pod})
	if err != nil {
		return fmt.Errorf("RemovePodSandbox: %w", err)
	}
	show(append(stopped.Updates, removed.Updates...))
	if described, err = engine.Describe(ctx, &enginev1.DescribeRequest{}); err != nil {
		return fmt.Errorf("Describe: %w", err)
	}
	for _, container := range described.Containers {
		fmt.Printf("container %s: cpus=%s\n", container.Id, container.Resources.GetCpus())
	}
	if err := reconfigure(ctx, engine, `reservedResources: {cpu: "cpuset:4"}`); err != nil {
		return err
	}
	return reconfigure(ctx, engine, `reservedResources: {cpu: "lots"}`) // refused: the old one stays
}

// reconfigure applies a new configuration; what it moves is queued, and the agent's loop
// takes and applies it (TakeUpdates, a long poll: it also brings what policy timers change).
func reconfigure(ctx context.Context, engine enginev1.EngineClient, config string) error {
	outcome, err := engine.Reconfigure(ctx, &enginev1.ReconfigureRequest{Config: config})
	if err != nil {
		return fmt.Errorf("Reconfigure: %w", err)
	}
	if !outcome.Applied {
		fmt.Printf("Reconfigure %s: refused: %s\n", config, outcome.Reason)
		return nil
	}
	fmt.Printf("Reconfigure %s: %d update(s) queued\n", config, outcome.Updates)
	queued, err := engine.TakeUpdates(ctx, &enginev1.TakeUpdatesRequest{WaitSeconds: 5})
	if err != nil {
		return fmt.Errorf("TakeUpdates: %w", err)
	}
	show(queued.Updates)
	return nil
}

func main() {
	socketPath := "/run/nrirp/engine.sock"
	if len(os.Args) > 1 {
		socketPath = os.Args[1]
	}
	if err := run(socketPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
