package cluster

import (
	"testing"

	"github.com/actorlet/actorlet/test/testutil"
)

// uplink is a TCP proxy standing for an edge node's WAN link to the hub
// (testutil.Proxy): Cut drops every connection through it and refuses new
// ones until Restore.
type uplink struct{ *testutil.Proxy }

func newUplink(t *testing.T, target string) *uplink {
	t.Helper()
	return &uplink{testutil.NewProxy(t, target)}
}

func (u *uplink) addr() string { return u.Addr() }
