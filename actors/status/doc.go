// Package status is actorlet's status manager: one actor that turns what
// the runtime manager read for a pod (messages.PodStatusComputed: container
// statuses, IPs, start time, whether the sandbox is ready, and the phase the
// pod actor set with podrules.PodPhase or its own terminal rules),
// admission rejections and probe results into the full v1.PodStatus the
// control plane sees, and publishes it to a Sink only when it changed. It
// is the one place conditions are generated (the kubelet's
// generateAPIPodStatus).
//
//	PodStatusComputed ─┐
//	PodRejected ───────┤                       ┌─► Sink.PodStatusChanged
//	ProbeResultChanged ┼─► status actor ─(changed?)┤
//	PodForgotten ──────┘    (per pod: spec,    └─► Sink.PodStatusRemoved
//	ListPodStatuses ──────►  runtime status,
//	     ◄── PodStatusList   probe results,
//	                         last published)
//
// The rules it enforces (the kubelet's status manager and generate.go):
//   - a container is started when it runs and its startup probe (if any)
//     succeeded, and ready when it is started and its readiness probe (if
//     any) succeeded;
//   - ContainersReady and Ready follow the containers (reasons
//     ContainersNotReady, PodCompleted, PodFailed) and Ready the readiness
//     gates; Initialized is True once every init container exited 0 and
//     every sidecar started (podrules.IncompleteInitContainers);
//     PodReadyToStartContainers follows the sandbox; PodScheduled is True;
//   - a condition's LastTransitionTime moves only when its status flips;
//   - a terminal phase (Succeeded, Failed) never goes back, nor does a
//     terminated container of such a pod; StartTime, once set, stays.
package status
