package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestStartFailsAtOnceOnAStuckPod gives the Pod the statuses the kubelet
// reports for a container that will not start: Start must say why at
// once, not wait for its deadline, and an image's trouble must be
// ErrImageUnavailable.
func TestStartFailsAtOnceOnAStuckPod(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status corev1.PodStatus
		image  bool
		want   string
	}{
		{"image pull", waiting("workspace", "ErrImagePull"), true, "ErrImagePull"},
		{"agent image never pulled", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{Name: "agent",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}}, true, "agent container's image"},
		{"config", waiting("workspace", "CreateContainerConfigError"), false, "cannot start: CreateContainerConfigError"},
		{"agent copy failed", corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{{Name: "agent",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}, false, "agent exited 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := testSpec()
			pod := podFor(spec, testOptions, "")
			pod.Status = tc.status
			client := fake.NewClientset(pod)
			opts := testOptions
			opts.StartTimeout = 1e12 // longer than the test's own deadline: Start must not wait for it
			e := newWithClient(opts, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
			err := e.Start(context.Background(), spec.Name)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, engine.ErrImageUnavailable) != tc.image {
				t.Errorf("Start = %v; want an error containing %q, ErrImageUnavailable %v", err, tc.want, tc.image)
			}
		})
	}
}

// TestStartWaitsForRunning starts a Pod the kubelet has not run yet, then
// runs it: Start returns once it is Running.
func TestStartWaitsForRunning(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	pod := podFor(spec, testOptions, "")
	pod.Status.Phase = corev1.PodPending
	client := fake.NewClientset(pod)
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan error, 1)
	go func() { done <- e.Start(context.Background(), spec.Name) }()
	pod.Status.Phase = corev1.PodRunning
	if _, err := client.CoreV1().Pods(testOptions.Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Start = %v", err)
	}
	if _, running, err := e.Running(context.Background(), spec.Name); !running || err != nil {
		t.Errorf("Running = %v, %v; want running", running, err)
	}
}

func waiting(container, reason string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: container, Image: "img",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
}
