package mux

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
)

// A REMOVE carries the stored pod, with the removal's deletion grace when
// that is shorter (a deleted key is grace 0): a grace period only shortens.
// Before, the removal's grace was dropped and the stored one kept.
func TestRemoveOnlyShortensTheDeletionGrace(t *testing.T) {
	grace := func(g int64) func(*v1.Pod) {
		return func(p *v1.Pod) { deleting(p); p.DeletionGracePeriodSeconds = &g }
	}
	for _, tc := range []struct {
		name            string
		stored, removed func(*v1.Pod)
		want            *int64
	}{
		{"graceful 600 s, removed with 0", grace(600), grace(0), ptr(0)},
		{"running, removed with 0", nil, grace(0), ptr(0)},
		{"graceful 5 s, removed with 600", grace(5), grace(600), ptr(5)},
		{"running, removed without deletion", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			m := New(s.out)
			ch := m.Channel(messages.SourceRemote)
			var mods, rmods []func(*v1.Pod)
			if tc.stored != nil {
				mods = append(mods, tc.stored)
			}
			if tc.removed != nil {
				rmods = append(rmods, tc.removed)
			}
			ch(set(pod("1", "a", append(mods, image("v2"))...)))
			s.take()
			ch(op(messages.OpRemove, pod("1", "a", rmods...)))
			got := s.take()
			if len(got) != 1 || got[0].Op != messages.OpRemove {
				t.Fatalf("got %v, want one REMOVE", summary(got))
			}
			p := got[0].Pods[0]
			if p.Spec.Containers[0].Image != "v2" {
				t.Errorf("REMOVE carries image %q, want the stored pod's v2", p.Spec.Containers[0].Image)
			}
			switch g := p.DeletionGracePeriodSeconds; {
			case tc.want == nil && g != nil:
				t.Errorf("grace = %d, want none", *g)
			case tc.want != nil && (g == nil || *g != *tc.want || p.DeletionTimestamp == nil):
				t.Errorf("grace = %v (deletion %v), want %d", g, p.DeletionTimestamp, *tc.want)
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }
