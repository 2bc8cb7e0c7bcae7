package seconds

import (
	"math"
	"testing"
	"time"
)

func TestDurationClampsHostileValues(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want time.Duration
	}{
		{0, 0},
		{-1, 0},
		{math.MinInt64, 0},
		{1, time.Second},
		{30, 30 * time.Second},
		{MaxSeconds - 1, Max - time.Second},
		{MaxSeconds, Max},
		{9223372036, Max}, // the last value that did not overflow
		{9223372037, Max}, // the first that did (wrapped to a negative duration)
		{1 << 62, Max},
		{math.MaxInt64, Max},
	} {
		if got := Duration(tc.in); got != tc.want {
			t.Errorf("Duration(%d) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := Duration(int32(math.MaxInt32)); got != time.Duration(math.MaxInt32)*time.Second {
		t.Errorf("Duration(MaxInt32) = %v", got)
	}
	if got := Duration(int32(math.MinInt32)); got != 0 {
		t.Errorf("Duration(MinInt32) = %v", got)
	}
	// Callers add a call timeout on top: no overflow there either.
	if d := Duration(int64(math.MaxInt64)) + 10*time.Minute; d <= 0 {
		t.Errorf("Max + 10m overflows: %v", d)
	}
	for in, want := range map[int64]int64{-5: 0, 7: 7, math.MaxInt64: MaxSeconds} {
		if got := Clamp(in); got != want {
			t.Errorf("Clamp(%d) = %d, want %d", in, got, want)
		}
	}
}
