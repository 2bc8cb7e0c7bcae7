package busauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/messages/wire"
)

// NodeConsumers are the consumers a node reads through. Both are durable
// pull consumers with DeliverAll and no acks, so the node can reset them to
// the first sequence (the only consumer operation besides fetch and info it
// is allowed) and re-read the full state after a restart or reconnect.
func NodeConsumers(node string) map[string]jetstream.ConsumerConfig {
	n := EncodeToken(node)
	return map[string]jetstream.ConsumerConfig{
		DesiredStream: {
			Durable:     wire.NodeDesiredConsumer(node),
			Description: "actorlet node " + node + ": its desired pods and the fleet pods",
			FilterSubjects: []string{
				"$KV." + wire.DesiredBucket + "." + wire.DesiredNodeWatch(node),
				"$KV." + wire.DesiredBucket + "." + wire.DesiredFleetWatch,
			},
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy:     jetstream.AckNonePolicy,
			ReplayPolicy:  jetstream.ReplayInstantPolicy,
		},
		StatusStream: {
			Durable:        wire.NodeStatusConsumer(node),
			Description:    "actorlet node " + node + ": its status keys (headers only)",
			FilterSubjects: []string{"$KV." + wire.StatusBucket + "." + n + ".>"},
			DeliverPolicy:  jetstream.DeliverAllPolicy,
			AckPolicy:      jetstream.AckNonePolicy,
			ReplayPolicy:   jetstream.ReplayInstantPolicy,
			HeadersOnly:    true,
		},
	}
}

// NodeObjectConsumers are the node's consumers on the ConfigMap and Secret
// buckets, made like NodeConsumers: one per bucket, filtered to the node's
// own scope and the fleet scope (wire.ObjectSubjects), so a node never
// receives another node's node-scoped objects.
func NodeObjectConsumers(node string) map[string]jetstream.ConsumerConfig {
	out := map[string]jetstream.ConsumerConfig{}
	for stream, bucket := range map[string]string{ConfigMapsStream: wire.ConfigMapsBucket, SecretsStream: wire.SecretsBucket} {
		out[stream] = jetstream.ConsumerConfig{
			Durable:        wire.NodeObjectConsumer(node),
			Description:    "actorlet node " + node + ": its " + bucket + " objects and the fleet ones",
			FilterSubjects: wire.ObjectSubjects(bucket, node),
			DeliverPolicy:  jetstream.DeliverAllPolicy,
			AckPolicy:      jetstream.AckNonePolicy,
			ReplayPolicy:   jetstream.ReplayInstantPolicy,
		}
	}
	return out
}

// EnsureNodeConsumers creates the node's consumers, or checks that they
// exist. A connection with node permissions cannot create them: it then
// returns wire.ErrNotProvisioned for a missing one, and accepts existing ones as
// they are. An error of a cluster between leaders ("JetStream system
// temporarily unavailable", a timeout) is retried until ctx ends: an agent
// starting during a server's restart waits rather than exits.
func EnsureNodeConsumers(ctx context.Context, js jetstream.JetStream, node string) error {
	return wire.RetryTransient(ctx, func(ctx context.Context) error { return ensureConsumers(ctx, js, NodeConsumers(node)) })
}

// EnsureNodeObjectConsumers does what EnsureNodeConsumers does for
// NodeObjectConsumers (the object buckets must exist). Operators run both
// (actorletctl node add); a node runs without its object consumers until
// they are there (sources/objects waits for them).
func EnsureNodeObjectConsumers(ctx context.Context, js jetstream.JetStream, node string) error {
	return wire.RetryTransient(ctx, func(ctx context.Context) error { return ensureConsumers(ctx, js, NodeObjectConsumers(node)) })
}

func ensureConsumers(ctx context.Context, js jetstream.JetStream, consumers map[string]jetstream.ConsumerConfig) error {
	for stream, cfg := range consumers {
		// Pull consumers for nodes, push consumers (a deliver subject) for
		// stream sources; jetstream looks each kind up separately.
		push := cfg.DeliverSubject != ""
		var have *jetstream.ConsumerInfo
		var err error
		if push {
			var c jetstream.PushConsumer
			if c, err = js.PushConsumer(ctx, stream, cfg.Durable); err == nil {
				have = c.CachedInfo()
			}
		} else {
			var c jetstream.Consumer
			if c, err = js.Consumer(ctx, stream, cfg.Durable); err == nil {
				have = c.CachedInfo()
			}
		}
		if err == nil {
			if h := have.Config; !sameFilters(h.FilterSubjects, h.FilterSubject, cfg.FilterSubjects) ||
				h.DeliverPolicy != cfg.DeliverPolicy || h.AckPolicy != cfg.AckPolicy || h.DeliverSubject != cfg.DeliverSubject {
				if push {
					_, err = js.UpdatePushConsumer(ctx, stream, cfg)
				} else {
					_, err = js.UpdateConsumer(ctx, stream, cfg)
				}
				if err != nil {
					return fmt.Errorf("consumer %s on %s has the wrong settings and cannot be updated: %w", cfg.Durable, stream, err)
				}
			}
			continue
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				return fmt.Errorf("consumer %s on %s: %w: %v", cfg.Durable, stream, wire.ErrNotProvisioned, err)
			}
			return fmt.Errorf("look up consumer %s on %s: %w", cfg.Durable, stream, err)
		}
		if push {
			_, err = js.CreatePushConsumer(ctx, stream, cfg)
		} else {
			_, err = js.CreateConsumer(ctx, stream, cfg)
		}
		if err != nil {
			if errors.Is(err, nats.ErrPermissionViolation) {
				return fmt.Errorf("consumer %s on %s: %w", cfg.Durable, stream, wire.ErrNotProvisioned)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
				// No answer: the server refused the create to this
				// connection (a node not provisioned: the refusal comes
				// as the connection's last error), or the stream has no
				// leader yet (a cluster just bootstrapped, or electing),
				// which the caller's RetryTransient waits out.
				if createRefused(js, stream) {
					return fmt.Errorf("consumer %s on %s: %w", cfg.Durable, stream, wire.ErrNotProvisioned)
				}
				return fmt.Errorf("create consumer %s on %s: no answer: %w", cfg.Durable, stream, err)
			}
			return fmt.Errorf("create consumer %s on %s: %w", cfg.Durable, stream, err)
		}
	}
	return nil
}

// createRefused reports whether the server refused this connection a
// consumer create on stream (its last error, a permissions violation).
func createRefused(js jetstream.JetStream, stream string) bool {
	last := js.Conn().LastError()
	return errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), "$JS.API.CONSUMER.CREATE."+stream+".")
}

func sameFilters(have []string, one string, want []string) bool {
	if one != "" {
		have = append(have, one)
	}
	if len(have) != len(want) {
		return false
	}
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

// PushAccount sends the account's current JWT to every server of the
// cluster over the system account (sysNC must be a system-account
// connection): a revocation takes effect at once, without a restart or a
// reload, and the connections of revoked users are closed.
func (a *Authority) PushAccount(ctx context.Context, sysNC *nats.Conn) error {
	aj, err := a.AccountJWT()
	if err != nil {
		return err
	}
	msg, err := sysNC.RequestWithContext(ctx, "$SYS.REQ.ACCOUNT."+a.AccountPublicKey()+".CLAIMS.UPDATE", []byte(aj))
	if err != nil {
		return fmt.Errorf("push account JWT: %w", err)
	}
	if err := claimUpdateError(msg.Data); err != nil {
		return err
	}
	return nil
}

// claimUpdateError reads the server's answer to a claims update
// ({"data":{...}} or {"error":{"code","description"}}).
func claimUpdateError(data []byte) error {
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("push account JWT: bad answer %q: %w", data, err)
	}
	if r.Error != nil {
		return fmt.Errorf("push account JWT: server says %d %s", r.Error.Code, r.Error.Description)
	}
	return nil
}
