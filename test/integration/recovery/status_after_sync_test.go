package recovery

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testenv"
)

// noEvents is a runtime without a container event stream (containerd 1.6):
// the agent must relist.
type noEvents struct{ *cri.Client }

func (noEvents) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse, func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return status.Error(codes.Unimplemented, "no container events here")
}

// A new pod is reported Running as soon as its containers start, not after
// PLEG's next relist: with a 30 s relist period it must show Running within
// a few seconds.
func TestNewPodReportedRunningWithoutWaitingForRelist(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{})
	conn := bustest.ConnectWithProtocol(t, srv)
	rt := startRuntime(t)
	cfg := testenv.AgentConfig(t, "s1", srv.ClientURL(), noEvents{rt})
	cfg.RelistPeriod = 30 * time.Second
	testenv.StartAgent(t, cfg)
	kv := bustest.KeyValue(t, conn.JS, wire.DesiredBucket)
	statusKV := bustest.KeyValue(t, conn.JS, wire.StatusBucket)
	// Let the first relist pass, so the next one is a full period away.
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	apply(t, kv, "s1", sleepPod("quick"))
	waitRunningWithin(t, statusKV, "s1", "quick", 10*time.Second)
	t.Logf("reported Running %s after the apply (relist period %s)", time.Since(start).Round(time.Millisecond), cfg.RelistPeriod)
}
