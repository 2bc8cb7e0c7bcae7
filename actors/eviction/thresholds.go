// Package eviction is the node's eviction manager (the kubelet's
// pkg/kubelet/eviction): it observes the node's signals, compares them
// with hard and soft thresholds, reports the pressure conditions and
// evicts one pod per monitoring round while a threshold is met.
package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal (the kubelet's evictionapi.Signal).
type Signal string

// The signals the node observes.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

// signals lists every signal, in the order memory pressure is relieved
// first (the kubelet's byEvictionPriority: memory before the rest).
var signals = []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable}

// signalCondition is the node condition a signal reports.
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:   v1.NodeMemoryPressure,
	SignalNodeFsAvailable:   v1.NodeDiskPressure,
	SignalNodeFsInodesFree:  v1.NodeDiskPressure,
	SignalImageFsAvailable:  v1.NodeDiskPressure,
	SignalImageFsInodesFree: v1.NodeDiskPressure,
	SignalPIDAvailable:      v1.NodePIDPressure,
}

// signalResource is the resource a signal's eviction reclaims, as the
// kubelet names it in the eviction message.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:   v1.ResourceMemory,
	SignalNodeFsAvailable:   v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:  "inodes",
	SignalImageFsAvailable:  v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree: "inodes",
	SignalPIDAvailable:      "pids",
}

// The kubelet's defaults (pkg/kubelet/apis/config/v1beta1 on Linux).
const (
	DefaultEvictionHard             = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%"
	DefaultPressureTransitionPeriod = 5 * time.Minute
	DefaultMonitoringInterval       = 10 * time.Second
	// maxSpecLen bounds a threshold flag's length; maxEntries its entries.
	maxSpecLen = 4096
	maxEntries = 32
)

// Value is a threshold's amount: a quantity, or a percentage (0..1) of
// the signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// amount is the value against a capacity.
func (v Value) amount(capacity *resource.Quantity) *resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity
	}
	return resource.NewQuantity(int64(v.Percentage*float64(capacity.Value())), resource.BinarySI)
}

// Threshold is one eviction threshold: met when the signal's available
// amount is below Value. A soft threshold has a GracePeriod it must hold
// for before it acts; a hard one acts at once.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	Soft        bool
	MinReclaim  *Value
}

// Flags are the eviction flags' texts, as the kubelet takes them.
type Flags struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim string
}

// ParseThresholds builds the thresholds from the flags: --eviction-hard
// and --eviction-soft as "signal<value,..." (a quantity or a percentage),
// --eviction-soft-grace-period as "signal=duration,...",
// --eviction-minimum-reclaim as "signal=value,...". A zero value disables
// a threshold, as the kubelet. Errors name the flag and the entry.
func ParseThresholds(f Flags) ([]Threshold, error) {
	hard, err := parseMap("--eviction-hard", f.Hard, "<")
	if err != nil {
		return nil, err
	}
	soft, err := parseMap("--eviction-soft", f.Soft, "<")
	if err != nil {
		return nil, err
	}
	graces, err := parseMap("--eviction-soft-grace-period", f.SoftGracePeriod, "=")
	if err != nil {
		return nil, err
	}
	reclaims, err := parseMap("--eviction-minimum-reclaim", f.MinimumReclaim, "=")
	if err != nil {
		return nil, err
	}
	minReclaim := map[Signal]*Value{}
	for sig, text := range reclaims {
		v, err := parseValue("--eviction-minimum-reclaim", sig, text)
		if err != nil {
			return nil, err
		}
		minReclaim[sig] = &v
	}
	var out []Threshold
	for _, sig := range sortedSignals(hard) {
		v, err := parseValue("--eviction-hard", sig, hard[sig])
		if err != nil {
			return nil, err
		}
		if v.isZero() {
			continue
		}
		out = append(out, Threshold{Signal: sig, Value: v, MinReclaim: minReclaim[sig]})
	}
	for sig := range graces {
		if _, ok := soft[sig]; !ok {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %s: no --eviction-soft threshold for this signal", sig)
		}
	}
	for _, sig := range sortedSignals(soft) {
		v, err := parseValue("--eviction-soft", sig, soft[sig])
		if err != nil {
			return nil, err
		}
		text, ok := graces[sig]
		if !ok {
			return nil, fmt.Errorf("--eviction-soft: %s: a soft threshold needs a grace period in --eviction-soft-grace-period", sig)
		}
		grace, err := time.ParseDuration(text)
		if err != nil || grace < 0 {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %s=%q: not a non-negative duration (like 1m30s)", sig, text)
		}
		if v.isZero() {
			continue
		}
		out = append(out, Threshold{Signal: sig, Value: v, GracePeriod: grace, Soft: true, MinReclaim: minReclaim[sig]})
	}
	return out, nil
}

func (v Value) isZero() bool {
	if v.Quantity != nil {
		return v.Quantity.IsZero()
	}
	return v.Percentage == 0
}

func sortedSignals[T any](m map[Signal]T) []Signal {
	out := make([]Signal, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// parseMap splits "k<sep>v,k<sep>v" into signals and values; each signal
// must be known and appear once.
func parseMap(flag, spec, sep string) (map[Signal]string, error) {
	out := map[Signal]string{}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return out, nil
	}
	if len(spec) > maxSpecLen {
		return nil, fmt.Errorf("%s: %d bytes, the limit is %d", flag, len(spec), maxSpecLen)
	}
	entries := strings.Split(spec, ",")
	if len(entries) > maxEntries {
		return nil, fmt.Errorf("%s: %d entries, the limit is %d", flag, len(entries), maxEntries)
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		k, v, ok := strings.Cut(e, sep)
		if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%s: %q: want <signal>%s<value>", flag, e, sep)
		}
		sig := Signal(strings.TrimSpace(k))
		if _, known := signalCondition[sig]; !known {
			return nil, fmt.Errorf("%s: unsupported eviction signal %q (supported: %s)", flag, sig, supported())
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("%s: signal %s given twice", flag, sig)
		}
		out[sig] = strings.TrimSpace(v)
	}
	return out, nil
}

func supported() string {
	names := make([]string, len(signals))
	for i, s := range signals {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// parseValue parses a quantity ("100Mi", "1000" for inodes or pids) or
// a percentage ("10%", "2.5%"), as the kubelet's parseThresholdStatement.
func parseValue(flag string, sig Signal, text string) (Value, error) {
	if p, ok := strings.CutSuffix(text, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%s: %s: %q is not a percentage", flag, sig, text)
		}
		if f < 0 {
			return Value{}, fmt.Errorf("%s: %s: eviction percentage threshold must be >= 0%%: %s", flag, sig, text)
		}
		if f > 100 {
			return Value{}, fmt.Errorf("%s: %s: eviction percentage threshold must be <= 100%%: %s", flag, sig, text)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %s: %q is not a quantity (like 100Mi) or a percentage (like 10%%)", flag, sig, text)
	}
	if q.Sign() < 0 {
		return Value{}, fmt.Errorf("%s: %s: eviction threshold must be positive: %s", flag, sig, text)
	}
	return Value{Quantity: &q}, nil
}
