package hostile

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/publish"
)

// TestHostileDesiredEntries: garbage, nesting, alias and env bombs, a pod
// with 1,000 containers and a pod whose status is larger than the bus
// payload, written between two ordinary pods. The agent rejects or bounds
// each with a clear reason, the ordinary pods run, and RSS stays bounded.
func TestHostileDesiredEntries(t *testing.T) {
	e := newEnv(t)
	e.startPod("before")
	base := rss(t)

	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 40; i++ {
		b := make([]byte, rng.Intn(32<<10))
		rng.Read(b)
		e.put(wire.DesiredNodeKey(nodeName, "default", fmt.Sprintf("random-%d", i)), b)
	}
	e.put(wire.DesiredNodeKey(nodeName, "default", "deep-array"), []byte(strings.Repeat("[", 200000)+strings.Repeat("]", 200000)))
	e.put(wire.DesiredNodeKey(nodeName, "default", "deep-object"), []byte(strings.Repeat(`{"a":`, 100000)+"1"+strings.Repeat("}", 100000)))
	// The "billion laughs": nine levels of nine aliases.
	var laughs strings.Builder
	laughs.WriteString("a0: &a0 [\"lol\"]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ","))
	}
	e.put(wire.DesiredNodeKey(nodeName, "default", "laughs"), []byte(laughs.String()))

	// An env bomb: three levels of 1,000 references (~100 GB expanded).
	bomb := pod("env-bomb")
	refs := func(name string) string { return strings.Repeat("$("+name+")", 1000) }
	bomb.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "A", Value: strings.Repeat("x", 100)},
		{Name: "B", Value: refs("A")}, {Name: "C", Value: refs("B")}, {Name: "D", Value: refs("C")},
	}
	e.putPod(bomb)

	many := pod("many")
	for i := 1; i < 1000; i++ {
		many.Spec.Containers = append(many.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "local/host", Command: []string{"sleep", "3600"}})
	}
	e.putPod(many)

	// ~1,046,000 bytes of args: the pod just fits in a bus message (1 MiB),
	// its status (the pod and its status) does not.
	big := pod("big-status", "sh", "-c", "exec sleep 3600", "sh")
	for i := 0; i < 10; i++ {
		big.Spec.Containers[0].Command = append(big.Spec.Containers[0].Command, strings.Repeat("z", 104_600))
	}
	e.putPod(big)

	e.startPod("after")
	e.waitRunning("before")

	for _, name := range []string{"random-0", "random-39", "deep-array", "deep-object", "laughs"} {
		e.waitStatus(name, "rejected", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == "FailedValidation"
		})
	}
	got := e.waitStatus("many", "rejected for its containers", func(p *v1.Pod) bool {
		return p.Status.Reason == "FailedValidation" && strings.Contains(p.Status.Message, "MaxContainersPerPod")
	})
	if len(got.Status.Message) > 8<<10 {
		t.Errorf("the rejection message of many is %d bytes", len(got.Status.Message))
	}
	e.waitStatus("env-bomb", "failing on its environment", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs[0].State.Waiting.Message, "MaxExpandedEnvBytes")
	})
	e.waitStatus("big-status", "published truncated", func(p *v1.Pod) bool {
		return p.Annotations[publish.TruncatedAnnotation] != "" && p.Status.Phase == v1.PodRunning
	})
	checkRSS(t, base, "after the hostile desired entries")
}
