package agent

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/validation"
)

// maxAdmissionVerdicts bounds the verdicts waiting for the sync loop; past
// it they are dropped and admission falls back to the checks that need no
// disk (a missing command).
const maxAdmissionVerdicts = 4096

// runtimeAdmission refuses, with one message naming the fields, the
// containers the process runtime cannot start — rather than failing their
// start over and over: no command (there is no image entrypoint), or
// args-only whose program is not on the node. Looking a program up reads
// the disk, which the sync loop must not wait on: precheck does it in the
// sources' goroutine for the pods an update adds, before the update is
// sent, and the loop's admit reads the verdict.
type runtimeAdmission struct {
	mu       sync.Mutex
	verdicts map[types.UID]string // refusal message, "" to admit
}

// newRuntimeAdmission returns the admission check for the runtime that
// reports runtimeVersion ("name://version"), nil for one that runs what
// the API allows.
func newRuntimeAdmission(runtimeVersion string) *runtimeAdmission {
	if !validation.IsProcessRuntime(runtimeVersion) {
		return nil
	}
	return &runtimeAdmission{verdicts: map[types.UID]string{}}
}

// precheck decides, off the sync loop, on the pods u adds.
func (r *runtimeAdmission) precheck(u *messages.PodUpdate) {
	if r == nil || u.Op != messages.OpAdd {
		return
	}
	for _, p := range u.Pods {
		msg := refusal(p, validation.LookPath)
		r.mu.Lock()
		if len(r.verdicts) >= maxAdmissionVerdicts {
			clear(r.verdicts)
		}
		r.verdicts[p.UID] = msg
		r.mu.Unlock()
	}
}

// admit is the sync loop's check (supervisor.Config.Admit): the verdict
// precheck left, else the checks that need no disk.
func (r *runtimeAdmission) admit(pod *v1.Pod) (string, string) {
	r.mu.Lock()
	msg, ok := r.verdicts[pod.UID]
	delete(r.verdicts, pod.UID)
	r.mu.Unlock()
	if !ok {
		msg = refusal(pod, nil)
	}
	if msg == "" {
		return "", ""
	}
	return validation.ReasonRuntimeUnsupported, msg
}

// admitFunc is admit as the supervisor takes it, nil without a check.
func (r *runtimeAdmission) admitFunc() func(*v1.Pod) (string, string) {
	if r == nil {
		return nil
	}
	return r.admit
}

func refusal(pod *v1.Pod, lookPath func(name, path string) error) string {
	errs := validation.ProcessRuntimeErrors(&pod.Spec, lookPath)
	if len(errs) == 0 {
		return ""
	}
	return "Pod cannot run on this node's process runtime: " + errs.ToAggregate().Error()
}
