package busauth_test

import (
	"fmt"
	"testing"

	"github.com/actorlet/actorlet/bus/bustest"
)

// TestMoreNodesThanTheStreamConsumerDefault: nats-server caps a stream at
// default_max_consumers (1,000) unless the account sets its own limit;
// every node has a consumer of its own on each bucket, so the account's
// limit is what lets a fleet grow past it. The server here caps streams
// at 2 and three nodes are provisioned.
func TestMoreNodesThanTheStreamConsumerDefault(t *testing.T) {
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true, DefaultMaxConsumers: 2})
	for i := range 3 {
		srv.NodeCreds(t, fmt.Sprintf("n%d", i))
	}
}
