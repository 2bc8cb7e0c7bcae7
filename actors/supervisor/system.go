package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"k8s.io/klog/v2"
)

// NewActorSystem returns an actor system whose own logging goes through
// klog: errors as klog errors, warnings and info at V(2), debug at V(5).
func NewActorSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(&klogHandler{})
	}))
}

// klogHandler is a slog.Handler writing structured records to klog.
type klogHandler struct {
	attrs  []any
	prefix string
}

var _ slog.Handler = &klogHandler{}

func (h *klogHandler) Enabled(_ context.Context, l slog.Level) bool {
	switch {
	case l >= slog.LevelError:
		return true
	case l >= slog.LevelInfo:
		return klog.V(2).Enabled()
	}
	return klog.V(5).Enabled()
}

func (h *klogHandler) Handle(_ context.Context, r slog.Record) error {
	kv := append([]any(nil), h.attrs...)
	var err error
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok && err == nil {
			err = e
			return true
		}
		kv = append(kv, h.prefix+a.Key, a.Value.Any())
		return true
	})
	msg := capitalise(r.Message)
	switch {
	case r.Level >= slog.LevelError:
		klog.ErrorS(err, msg, kv...)
	case r.Level >= slog.LevelInfo:
		if err != nil {
			kv = append(kv, "err", err)
		}
		klog.V(2).InfoS(msg, kv...)
	default:
		klog.V(5).InfoS(msg, kv...)
	}
	return nil
}

func (h *klogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &klogHandler{attrs: append([]any(nil), h.attrs...), prefix: h.prefix}
	for _, a := range as {
		n.attrs = append(n.attrs, h.prefix+a.Key, a.Value.Any())
	}
	return n
}

func (h *klogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &klogHandler{attrs: h.attrs, prefix: h.prefix + name + "."}
}

// capitalise follows the house style: messages start with a capital and
// have no trailing period.
func capitalise(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return "Actor system event"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// actorName is the name of the pod actor for uid in its generation.
func actorName(uid string, generation int) string {
	if generation <= 1 {
		return uid
	}
	return fmt.Sprintf("%s~%d", uid, generation)
}
