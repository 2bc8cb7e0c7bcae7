package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCacheGetSetDelete(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(clocktesting.NewFakeClock(t0))

	got, err := c.Get("unknown")
	if err != nil || got == nil || got.ID != "unknown" || len(got.ContainerStatuses) != 0 {
		t.Fatalf("Get(unknown) = %+v, %v; want an empty status", got, err)
	}

	newer := &cri.PodStatus{ID: "u", Name: "newer"}
	c.Set("u", newer, nil, t0.Add(2*time.Second))
	c.Set("u", &cri.PodStatus{ID: "u", Name: "older"}, nil, t0.Add(time.Second))
	if got, _ := c.Get("u"); got != newer {
		t.Fatalf("an older Set overwrote a newer one: got %+v", got)
	}

	failure := errors.New("inspect failed")
	c.Set("u", nil, failure, t0.Add(3*time.Second))
	if got, err := c.Get("u"); !errors.Is(err, failure) || got == nil || got.ID != "u" {
		t.Fatalf("Get after failed Set = %+v, %v; want empty status and the error", got, err)
	}

	c.Delete("u")
	if got, err := c.Get("u"); err != nil || got.Name != "" {
		t.Fatalf("Get after Delete = %+v, %v; want empty status", got, err)
	}
}

func TestCacheSetZeroTimeUsesClock(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(clocktesting.NewFakeClock(t0))
	c.Set("u", &cri.PodStatus{ID: "u"}, nil, time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := c.GetNewerThan(ctx, "u", t0.Add(-time.Nanosecond)); err != nil {
		t.Fatalf("entry stamped with the clock is not newer than before it: %v", err)
	}
}

func TestCacheGetNewerThan(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// write makes the waiter's condition true.
		write func(c *Cache)
		want  string
	}{
		{"newer Set of the pod", func(c *Cache) { c.Set("u", &cri.PodStatus{ID: "u", Name: "fresh"}, nil, t0.Add(2*time.Second)) }, "fresh"},
		{"cache-wide UpdateTime", func(c *Cache) { c.UpdateTime(t0.Add(2 * time.Second)) }, "stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(clocktesting.NewFakeClock(t0))
			c.Set("u", &cri.PodStatus{ID: "u", Name: "stale"}, nil, t0)

			type result struct {
				s   *cri.PodStatus
				err error
			}
			done := make(chan result, 1)
			go func() {
				s, err := c.GetNewerThan(context.Background(), "u", t0.Add(time.Second))
				done <- result{s, err}
			}()

			// Writes that do not satisfy the waiter must not wake it with data.
			c.Set("other", &cri.PodStatus{ID: "other"}, nil, t0.Add(5*time.Second))
			c.Set("u", &cri.PodStatus{ID: "u", Name: "stale"}, nil, t0.Add(time.Second)) // not strictly newer
			c.UpdateTime(t0.Add(time.Second))
			select {
			case r := <-done:
				t.Fatalf("GetNewerThan returned early with %+v, %v", r.s, r.err)
			case <-time.After(50 * time.Millisecond):
			}

			tt.write(c)
			select {
			case r := <-done:
				if r.err != nil || r.s.Name != tt.want {
					t.Fatalf("GetNewerThan = %+v, %v; want %q", r.s, r.err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("GetNewerThan did not return after a newer write")
			}
		})
	}
}

func TestCacheGetNewerThanUnknownPodAfterUpdateTime(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(clocktesting.NewFakeClock(t0))
	c.UpdateTime(t0.Add(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.GetNewerThan(ctx, "nobody", t0)
	if err != nil || s.ID != "nobody" || !s.TimeStamp.Equal(t0.Add(time.Second)) {
		t.Fatalf("GetNewerThan(unknown) = %+v, %v; want empty status as of the relist", s, err)
	}
}

func TestCacheGetNewerThanHonoursContext(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(clocktesting.NewFakeClock(t0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetNewerThan(ctx, "u", t0)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("GetNewerThan error = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThan ignored the canceled context")
	}
}
