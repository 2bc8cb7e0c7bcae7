package publish

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// Node condition types actorlet reports besides Ready.
const (
	NodeRuntimeReady v1.NodeConditionType = "RuntimeReady"
	NodePLEGHealthy  v1.NodeConditionType = "PLEGHealthy"
)

// NodeShuttingDownMessage is the Ready condition's message (reason
// KubeletNotReady) while a graceful node shutdown runs, as the kubelet's.
const NodeShuttingDownMessage = "node is shutting down"

// nodeFacts is what a node reports that does not change while it runs.
type nodeFacts struct {
	name     string
	labels   map[string]string
	capacity v1.ResourceList
	// allocatable is capacity minus the reservations (nil: capacity).
	allocatable v1.ResourceList
	info        v1.NodeSystemInfo
	addresses   []v1.NodeAddress
	period      time.Duration // heartbeat period, published as an annotation
	taints      []v1.Taint
}

// buildNode renders the node with the latest conditions. prev (may be nil)
// supplies each condition's lastTransitionTime while its status holds.
func buildNode(f nodeFacts, conds messages.NodeConditions, condErr error, now time.Time, prev []v1.NodeCondition) *v1.Node {
	alloc := f.allocatable
	if alloc == nil {
		alloc = f.capacity
	}
	n := &v1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Labels: copyMap(f.labels),
			Annotations: map[string]string{wire.HeartbeatPeriodAnnotation: f.period.String()}},
		Spec: v1.NodeSpec{Taints: append([]v1.Taint(nil), f.taints...)},
		Status: v1.NodeStatus{
			Capacity:    f.capacity.DeepCopy(),
			Allocatable: alloc.DeepCopy(),
			NodeInfo:    f.info,
			Addresses:   append([]v1.NodeAddress(nil), f.addresses...),
			Phase:       v1.NodeRunning,
		},
	}
	n.Status.Conditions = nodeConditions(conds, condErr, now, prev)
	return n
}

func nodeConditions(c messages.NodeConditions, condErr error, now time.Time, prev []v1.NodeCondition) []v1.NodeCondition {
	cond := func(t v1.NodeConditionType, ok bool, goodReason, badReason, goodMsg, badMsg string) v1.NodeCondition {
		nc := v1.NodeCondition{Type: t, Status: v1.ConditionTrue, Reason: goodReason, Message: goodMsg}
		switch {
		case condErr != nil:
			nc.Status, nc.Reason, nc.Message = v1.ConditionUnknown, "NodeStatusUnknown", "cannot read node conditions: "+condErr.Error()
		case !ok:
			nc.Status, nc.Reason, nc.Message = v1.ConditionFalse, badReason, badMsg
		}
		return nc
	}
	var notReady []string
	if c.ShuttingDown {
		notReady = append(notReady, NodeShuttingDownMessage)
	}
	if !c.RuntimeReady {
		notReady = append(notReady, "container runtime not ready: "+orDefault(c.RuntimeMessage, "no detail"))
	}
	if !c.PLEGHealthy {
		notReady = append(notReady, "PLEG is not healthy: "+orDefault(c.PLEGMessage, "no detail"))
	}
	out := []v1.NodeCondition{
		cond(v1.NodeReady, len(notReady) == 0, "KubeletReady", "KubeletNotReady",
			"actorlet is posting ready status", strings.Join(notReady, "; ")),
		cond(NodeRuntimeReady, c.RuntimeReady, "RuntimeReady", "RuntimeNotReady",
			"container runtime is ready", orDefault(c.RuntimeMessage, "container runtime not ready")),
		cond(NodePLEGHealthy, c.PLEGHealthy, "PLEGHealthy", "PLEGNotHealthy",
			"pod lifecycle event generator is relisting", orDefault(c.PLEGMessage, "PLEG is not healthy")),
	}
	out = append(out, pressureConditions(c.Pressure, condErr)...)
	for i := range out {
		out[i].LastHeartbeatTime = metav1.NewTime(now)
		out[i].LastTransitionTime = metav1.NewTime(now)
		for _, p := range prev {
			if p.Type == out[i].Type && p.Status == out[i].Status {
				out[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return out
}

// pressure is one pressure condition's words, as the kubelet's
// setters.MemoryPressureCondition, DiskPressureCondition and
// PIDPressureCondition write them (status False: no pressure).
var pressure = []struct {
	t                     v1.NodeConditionType
	okReason, badReason   string
	okMessage, badMessage string
}{
	{v1.NodeMemoryPressure, "KubeletHasSufficientMemory", "KubeletHasInsufficientMemory",
		"kubelet has sufficient memory available", "kubelet has insufficient memory available"},
	{v1.NodeDiskPressure, "KubeletHasNoDiskPressure", "KubeletHasDiskPressure",
		"kubelet has no disk pressure", "kubelet has disk pressure"},
	{v1.NodePIDPressure, "KubeletHasSufficientPID", "KubeletHasInsufficientPID",
		"kubelet has sufficient PID available", "kubelet has insufficient PID available"},
}

// pressureConditions are MemoryPressure, DiskPressure and PIDPressure:
// True while the eviction manager reports them.
func pressureConditions(under []v1.NodeConditionType, condErr error) []v1.NodeCondition {
	out := make([]v1.NodeCondition, 0, len(pressure))
	for _, p := range pressure {
		nc := v1.NodeCondition{Type: p.t, Status: v1.ConditionFalse, Reason: p.okReason, Message: p.okMessage}
		switch {
		case condErr != nil:
			nc.Status, nc.Reason, nc.Message = v1.ConditionUnknown, "NodeStatusUnknown", "cannot read node conditions: "+condErr.Error()
		case slices.Contains(under, p.t):
			nc.Status, nc.Reason, nc.Message = v1.ConditionTrue, p.badReason, p.badMessage
		}
		out = append(out, nc)
	}
	return out
}

// detectFacts reads the host: hostname, machine and boot IDs, kernel, OS
// image, CPU and memory, addresses.
func detectFacts(name string, extraLabels map[string]string, maxPods int, version, runtimeVersion string) nodeFacts {
	labels := map[string]string{
		v1.LabelHostname:   strings.ToLower(name),
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range extraLabels {
		labels[k] = v
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:  *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourcePods: *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	if mem, err := memTotal("/proc/meminfo"); err == nil {
		capacity[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	return nodeFacts{
		name:     name,
		labels:   labels,
		capacity: capacity,
		info: v1.NodeSystemInfo{
			MachineID:               readTrim("/etc/machine-id"),
			SystemUUID:              readTrim("/sys/class/dmi/id/product_uuid"),
			BootID:                  readTrim("/proc/sys/kernel/random/boot_id"),
			KernelVersion:           readTrim("/proc/sys/kernel/osrelease"),
			OSImage:                 osImage("/etc/os-release"),
			ContainerRuntimeVersion: runtimeVersion,
			KubeletVersion:          version,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
		},
		addresses: addresses(),
	}
}

func addresses() []v1.NodeAddress {
	var out []v1.NodeAddress
	if ip := internalIP(); ip != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	if h, err := os.Hostname(); err == nil {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: h})
	}
	return out
}

// internalIP is the first global unicast address, IPv4 preferred.
func internalIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	var v6 string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
		if v6 == "" {
			v6 = ipn.IP.String()
		}
	}
	return v6
}

// memTotal reads MemTotal in bytes from a meminfo file.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse MemTotal %q: %w", fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in %s", path)
}

func osImage(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return runtime.GOOS
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return runtime.GOOS
}

func readTrim(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
