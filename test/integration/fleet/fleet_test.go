package fleet

import (
	"testing"
	"time"
)

// TestFleet runs every scenario against one nats-server. Scenarios run in
// parallel (bounded by -parallel) with their own nodes and pod names; fleet
// pods select nodes by labels no other scenario uses.
func TestFleet(t *testing.T) {
	f := newFleet(t)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *fleet)
	}{
		{"RemoteLifecycle", testRemoteLifecycle},
		{"NodeOffline", testNodeOffline},
		{"AgentRestart", testAgentRestart},
		{"InvalidPayloads", testInvalidPayloads},
		{"FleetSelector", testFleetSelector},
		{"StaticPods", testStaticPods},
		{"Commands", testCommands},
		{"NodeNotReady", testNodeNotReady},
		{"UnknownNode", testUnknownNode},
		{"KeyDeletedDuringGracefulDeletion", testKeyDeletedDuringGracefulDeletion},
		{"UIDChangedInPlace", testUIDChangedInPlace},
		{"Interactive", testInteractive},
		{"ConfigMapsAndSecrets", testObjects},
		{"AffinityAndTaints", testPlacement},
		{"Examples", testExamples},
		{"VolumeManifests", testVolumeManifests},
		{"PodLifecycleFields", testPodLifecycleFields},
		{"Debug", testDebug},
		{"KubectlForms", testKubectlForms},
		{"Admission", testAdmission},
		{"Allocatable", testAllocatable},
		{"QOSCgroups", testQOSCgroups},
		{"DebugRefusedWithoutExec", testDebugRefusedWithoutExec},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			t.Cleanup(func() { t.Logf("%s took %s", sc.name, time.Since(start).Round(100*time.Millisecond)) })
			sc.run(t, f)
		})
	}
}
