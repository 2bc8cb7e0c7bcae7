package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrKeyGone is LeaderGet's answer for a key the bucket does not hold, or
// whose last operation is a delete or purge.
var ErrKeyGone = errors.New("key not in bucket")

// LeaderGet reads a KV key from its stream's leader. KeyValue.Get uses
// JetStream's direct get, which any replica answers, and a replica that is
// catching up (a server just restarted) answers "not found" for a key it
// has not received yet; before removing a pod on that word, the node asks
// the leader, which only answers with what is committed. domain is "" for
// the client's own JetStream.
func LeaderGet(ctx context.Context, nc *nats.Conn, domain, bucket, key string) (jetstream.KeyValueEntry, error) {
	prefix := "$JS.API."
	if domain != "" {
		prefix = "$JS." + domain + ".API."
	}
	req, err := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	if err != nil {
		return nil, err
	}
	msg, err := nc.RequestWithContext(ctx, prefix+"STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, fmt.Errorf("read %s key %q from the stream leader: %w", bucket, key, err)
	}
	var resp struct {
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("read %s key %q from the stream leader: %w", bucket, key, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, ErrKeyGone
		}
		return nil, fmt.Errorf("read %s key %q from the stream leader: %w", bucket, key, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("read %s key %q from the stream leader: empty answer", bucket, key)
	}
	e := &leaderEntry{bucket: bucket, key: key, value: resp.Message.Data, rev: resp.Message.Sequence,
		created: resp.Message.Time, op: jetstream.KeyValuePut}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err == nil {
			switch strings.ToUpper(h.Get("KV-Operation")) {
			case "DEL", "PURGE":
				return nil, ErrKeyGone
			}
		}
	}
	return e, nil
}

// leaderEntry is a KV entry read by LeaderGet.
type leaderEntry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e *leaderEntry) Bucket() string                  { return e.bucket }
func (e *leaderEntry) Key() string                     { return e.key }
func (e *leaderEntry) Value() []byte                   { return e.value }
func (e *leaderEntry) Revision() uint64                { return e.rev }
func (e *leaderEntry) Created() time.Time              { return e.created }
func (e *leaderEntry) Delta() uint64                   { return 0 }
func (e *leaderEntry) Operation() jetstream.KeyValueOp { return e.op }
