// Package prober runs container probes as actors: a manager, child of the
// supervisor, and one worker per (pod, container, probe kind).
//
//	supervisor ──PodStatusComputed / PodForgotten / ListProbes──▶ manager
//	manager ──targetUpdate (container ID, running, started-at, pod IP,
//	          startup gate)──▶ worker (one per pod UID × container × kind)
//	worker ──workerReport (state, changed result)──▶ manager
//	manager ──ProbeResultChanged (only on change)──▶ supervisor (parent)
//
// A worker's life (behaviours):
//
//	        new container ID: reset to the initial result
//	   ┌──────────────────────────────────────────────┐
//	   ▼                                              │
//	active ──tick: probe in a goroutine──▶ probeDone ─┤
//	   │  (skipped while not running, gated by the    │
//	   │   startup probe, or within initialDelay)     │
//	   │                                              │
//	   └─ liveness/startup Failure, startup Success ─▶ holding
//
// Initial results: readiness Failure, liveness Success, startup Unknown.
// Results count against the success/failure thresholds before they change;
// a readiness worker reports Failure while its container is not running.
// The probe handlers themselves live in the probe subpackage.
package prober
