package wire

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestNoSuitablePeersIsTransientOnlyForAnOfflinePeer: placement that
// fails because a server is offline may succeed once it is back (a
// restarting server, a just-started cluster); placement on tags no server
// carries never does.
func TestNoSuitablePeersIsTransientOnlyForAnOfflinePeer(t *testing.T) {
	for desc, want := range map[string]bool{
		"no suitable peers for placement, peer offline":                         true,
		"no suitable peers for placement, tags not matched [gpu]":               false,
		"no suitable peers for placement, peer offline, tags not matched [gpu]": false,
		"no suitable peers for placement, insufficient storage":                 false,
	} {
		err := fmt.Errorf("create bucket: %w", &jetstream.APIError{Code: 400, ErrorCode: jsErrNoSuitablePeers, Description: desc})
		if got := IsTransient(err); got != want {
			t.Errorf("IsTransient(%q) = %v, want %v", desc, got, want)
		}
	}
}

// TestJetStreamNotEnabledForAccountIsTransient: a server of a secured
// cluster that just started answers it until the account's JetStream is
// set up (seen once in 20 TestServerRestartRemovesNoPod runs).
func TestJetStreamNotEnabledForAccountIsTransient(t *testing.T) {
	err := fmt.Errorf("look up bucket: %w", &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabledForAccount, Description: "JetStream not enabled for account"})
	if !IsTransient(err) {
		t.Errorf("IsTransient(%v) = false, want true", err)
	}
}
