// Package kuberuntime is actorlet's runtime manager, the counterpart of the
// kubelet's pkg/kubelet/kuberuntime: it turns a v1.Pod into CRI calls through
// cri.Runtime and reads the runtime's view of the pod back.
//
// One SyncPod pass compares the desired pod with the runtime status
// (computePodActions) and executes the difference:
//
//	          ┌──────────── sandbox missing / not ready / network changed ───┐
//	          │                                                              ▼
//	status ──►compute ──► kill containers to kill ──► (kill pod, new sandbox, attempt+1)
//	          │                                                              │
//	          └──► next init container (one at a time, must exit 0) ◄────────┘
//	                     │ all init containers done
//	                     ▼
//	               regular containers to start (restartPolicy, back-off)
//
// Starting a container: back-off check → image (pull policy, pull back-off)
// → CreateContainer → StartContainer → postStart hook (failure kills it).
// Killing a container: preStop hook within the grace period → StopContainer
// with the remaining grace.
//
// Failures of the last sync are kept in a reason cache so ConvertPodStatus
// can report waiting reasons (CrashLoopBackOff, ErrImagePull, …), and the
// restart and image-pull back-offs run on an injected clock.
//
// ConvertPodStatus returns only what the runtime says (the kubelet's
// ConvertPodStatusToAPIPodStatus): container statuses, IPs, host IP, start
// time, and whether the sandbox is ready. The phase is podrules.PodPhase,
// which the pod actor applies; every condition is the status actor's.
package kuberuntime
