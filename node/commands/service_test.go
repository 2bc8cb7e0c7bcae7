package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/actorlet/actorlet/messages/seconds"
	"github.com/actorlet/actorlet/messages/wire"
)

func TestServiceVerbs(t *testing.T) {
	nc := runNATS(t)
	fake := &fakeNode{exec: func(cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
		if cmd[0] == "timeout?" {
			return []byte(timeout.String()), nil, 0, nil
		}
		return []byte("out:" + strings.Join(cmd, " ")), []byte("err"), 3, nil
	}}
	fake.setPods(testPod("default", "web", "u1", "app"), testPod("kube-system", "dns", "u2", "dns"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	ctx := context.Background()

	t.Run("pods.list all", func(t *testing.T) {
		pods, err := c.ListPods(ctx, "n1", "")
		if err != nil || len(pods) != 2 {
			t.Fatalf("ListPods = %d pods, %v; want 2", len(pods), err)
		}
	})
	t.Run("pods.list namespace", func(t *testing.T) {
		pods, err := c.ListPods(ctx, "n1", "kube-system")
		if err != nil || len(pods) != 1 || pods[0].Name != "dns" {
			t.Fatalf("ListPods(kube-system) = %v, %v", pods, err)
		}
	})
	t.Run("pods.get", func(t *testing.T) {
		p, err := c.GetPod(ctx, "n1", "", "web") // empty namespace = default
		if err != nil || p.UID != "u1" || !p.Status.ContainerStatuses[0].Ready {
			t.Fatalf("GetPod = %+v, %v", p, err)
		}
	})
	t.Run("pods.describe", func(t *testing.T) {
		d, err := c.DescribePod(ctx, "n1", "default", "web")
		if err != nil || d.Pod.Name != "web" || d.BackOffs["app"].Unix() != 1700000000 {
			t.Fatalf("DescribePod = %+v, %v", d, err)
		}
	})
	t.Run("exec", func(t *testing.T) {
		r, err := c.Exec(ctx, "n1", wire.ExecRequest{Name: "web", Command: []string{"echo", "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		want := &wire.ExecResponse{Stdout: []byte("out:echo hi"), Stderr: []byte("err"), ExitCode: 3}
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("Exec = %+v, want %+v", r, want)
		}
	})
	t.Run("exec with a huge timeoutSeconds", func(t *testing.T) {
		// 9223372037 s and more overflowed to a negative timeout: the exec
		// failed at once. It is clamped to seconds.Max.
		for _, ts := range []int64{9223372037, math.MaxInt64} {
			r, err := c.Exec(ctx, "n1", wire.ExecRequest{Name: "web", Command: []string{"timeout?"}, TimeoutSeconds: ts})
			if err != nil || string(r.Stdout) != seconds.Max.String() {
				t.Errorf("Exec(timeoutSeconds %d) = %+v, %v; want a timeout of %v", ts, r, err, seconds.Max)
			}
		}
	})
	t.Run("restart", func(t *testing.T) {
		msg, err := c.Restart(ctx, "n1", "default", "web", "app")
		if err != nil || !strings.Contains(msg, "restart requested") {
			t.Fatalf("Restart = %q, %v", msg, err)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		if !reflect.DeepEqual(fake.restarts, []string{"default/web/app"}) {
			t.Fatalf("restarts = %v", fake.restarts)
		}
	})
	t.Run("evict", func(t *testing.T) {
		g := int64(5)
		if _, err := c.Evict(ctx, "n1", "default", "web", &g, ""); err != nil {
			t.Fatal(err)
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		if !reflect.DeepEqual(fake.evicts, []string{"default/web grace=5 reason=Evicted"}) {
			t.Fatalf("evicts = %v", fake.evicts)
		}
	})
	t.Run("micro info", func(t *testing.T) {
		msg, err := nc.Request("$SRV.INFO."+wire.CommandServiceName, nil, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var info micro.Info
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			t.Fatal(err)
		}
		if info.Metadata["node"] != "n1" || len(info.Endpoints) != len(wire.Verbs)+len(wire.PodVerbs) {
			t.Fatalf("info = %+v", info)
		}
		if info.Endpoints[0].Subject != wire.CommandSubject("n1", wire.VerbPodsList) {
			t.Fatalf("endpoint subject = %q", info.Endpoints[0].Subject)
		}
	})
}

func TestServiceErrors(t *testing.T) {
	nc := runNATS(t)
	fake := &fakeNode{exec: func(cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
		switch cmd[0] {
		case "slow":
			return nil, nil, 0, fmt.Errorf("exec: %w", context.DeadlineExceeded)
		case "broken":
			return nil, nil, 0, errors.New("runtime exploded")
		}
		return nil, nil, 0, nil
	}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	ctx := context.Background()
	neg := int64(-1)

	tests := []struct {
		name     string
		call     func() error
		code     int
		contains string
	}{
		{"get without name", func() error { _, err := c.GetPod(ctx, "n1", "default", ""); return err }, 400, "name: required"},
		{"get unknown pod", func() error { _, err := c.GetPod(ctx, "n1", "default", "nope"); return err }, 404, "default/nope"},
		{"describe unknown pod", func() error { _, err := c.DescribePod(ctx, "n1", "x", "y"); return err }, 404, "x/y"},
		{"exec without command", func() error { _, err := c.Exec(ctx, "n1", wire.ExecRequest{Name: "web"}); return err }, 400, "command: required"},
		{"exec timeout", func() error {
			_, err := c.Exec(ctx, "n1", wire.ExecRequest{Name: "web", Command: []string{"slow"}})
			return err
		}, 504, "deadline"},
		{"exec runtime error", func() error {
			_, err := c.Exec(ctx, "n1", wire.ExecRequest{Name: "web", Command: []string{"broken"}})
			return err
		}, 500, "runtime exploded"},
		{"evict negative grace", func() error { _, err := c.Evict(ctx, "n1", "default", "web", &neg, ""); return err }, 400, "gracePeriodSeconds"},
		{"restart unknown pod", func() error { _, err := c.Restart(ctx, "n1", "default", "nope", ""); return err }, 404, "nope"},
		{"logs negative tail", func() error {
			_, err := c.Logs(ctx, "n1", wire.LogsRequest{Name: "web", TailLines: &neg}, &strings.Builder{})
			return err
		}, 400, "tailLines"},
		{"logs follow previous", func() error {
			_, err := c.Logs(ctx, "n1", wire.LogsRequest{Name: "web", Follow: true, Previous: true}, &strings.Builder{})
			return err
		}, 400, "follow"},
		{"logs unknown container", func() error {
			_, err := c.Logs(ctx, "n1", wire.LogsRequest{Name: "web", Container: "zzz"}, &strings.Builder{})
			return err
		}, 404, "zzz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *wire.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Code != tt.code || !strings.Contains(e.Description, tt.contains) {
				t.Fatalf("err = %d %q, want %d containing %q", e.Code, e.Description, tt.code, tt.contains)
			}
		})
	}

	t.Run("list error is 500", func(t *testing.T) {
		fake.mu.Lock()
		fake.listErr = errors.New("status actor down")
		fake.mu.Unlock()
		_, err := c.ListPods(ctx, "n1", "")
		if wire.ErrorCode(err) != 500 || !strings.Contains(err.Error(), "status actor down") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("raw empty body is 400", func(t *testing.T) {
		msg, err := nc.Request(wire.CommandSubject("n1", wire.VerbPodsGet), nil, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Header.Get(micro.ErrorCodeHeader) != "400" || !strings.Contains(msg.Header.Get(micro.ErrorHeader), "body") {
			t.Fatalf("headers = %v", msg.Header)
		}
	})
}

func TestUnknownNodeHasNoResponders(t *testing.T) {
	nc := runNATS(t)
	startService(t, nc, &fakeNode{}, ServiceOptions{NodeName: "real"})
	c := &wire.Client{NC: nc, Timeout: 30 * time.Second}
	start := time.Now()
	_, err := c.ListPods(context.Background(), "ghost", "")
	if err == nil || !strings.Contains(err.Error(), `node "ghost" is not reachable (no responders): is it running?`) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("no-responders took %s, want < 1s", d)
	}
}

func TestServiceStartValidates(t *testing.T) {
	nc := runNATS(t)
	if _, err := StartService(nc, &fakeNode{}, ServiceOptions{}); err == nil || !strings.Contains(err.Error(), "NodeName") {
		t.Fatalf("err = %v, want NodeName required", err)
	}
}
