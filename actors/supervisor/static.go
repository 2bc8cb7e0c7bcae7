package supervisor

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// staticPods lets one static pod per full name run at a time; the others
// wait in first-come order.
type staticPods struct {
	running map[string]types.UID
	waiting map[string][]types.UID
}

func newStaticPods() staticPods {
	return staticPods{running: map[string]types.UID{}, waiting: map[string][]types.UID{}}
}

// mayStart claims name for uid when free (or already uid's); otherwise uid
// joins the queue once.
func (s staticPods) mayStart(uid types.UID, name string) bool {
	if cur, ok := s.running[name]; !ok || cur == uid {
		s.running[name] = uid
		return true
	}
	if !slices.Contains(s.waiting[name], uid) {
		s.waiting[name] = append(s.waiting[name], uid)
	}
	return false
}

// release frees name when uid holds it.
func (s staticPods) release(name string, uid types.UID) {
	if s.running[name] == uid {
		delete(s.running, name)
	}
}

// next pops the first waiting uid of name.
func (s staticPods) next(name string) (types.UID, bool) {
	q := s.waiting[name]
	if len(q) == 0 {
		return "", false
	}
	s.waiting[name] = q[1:]
	if len(s.waiting[name]) == 0 {
		delete(s.waiting, name)
	}
	return q[0], true
}

// forget drops uid from every queue.
func (s staticPods) forget(uid types.UID) {
	for name, q := range s.waiting {
		s.waiting[name] = slices.DeleteFunc(q, func(u types.UID) bool { return u == uid })
		if len(s.waiting[name]) == 0 {
			delete(s.waiting, name)
		}
	}
}

// isWaiting reports whether uid waits for its name.
func (s staticPods) isWaiting(uid types.UID) bool {
	for _, q := range s.waiting {
		if slices.Contains(q, uid) {
			return true
		}
	}
	return false
}

func isStatic(p *v1.Pod) bool {
	return messages.IsStatic(p)
}

func fullName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
