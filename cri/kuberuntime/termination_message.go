package kuberuntime

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's termination message limits.
const (
	// maxTerminationMessage: the last bytes of a container's termination
	// message file that are read.
	maxTerminationMessage = 4 * 1024
	// maxPodTerminationMessages: all termination messages of one pod; each
	// container's is cut to this divided by the number of containers.
	maxPodTerminationMessages = 12 * 1024
	// maxTerminationLogBytes and maxTerminationLogLines bound the log tail
	// used by FallbackToLogsOnError.
	maxTerminationLogBytes = 2 * 1024
	maxTerminationLogLines = 80
	// logTailWindow is how much of the end of a log file is scanned for
	// those lines.
	logTailWindow = 64 * 1024
	// maxCachedMessages bounds the cache of exited containers' messages.
	maxCachedMessages = 16384
)

// terminationMessageMount creates the file that backs c's termination
// message (<PodsDir>/<uid>/containers/<name>/<random>, one per instance, as
// the kubelet does) and returns its mount, or nil when the container has
// no terminationMessagePath or a volume is already mounted there.
func (m *Manager) terminationMessageMount(pod *v1.Pod, c *v1.Container, mounts []*runtimeapi.Mount) (*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" || m.opts.PodsDir == "" {
		return nil, nil
	}
	for _, mt := range mounts {
		if mt.ContainerPath == c.TerminationMessagePath {
			return nil, nil
		}
	}
	dir, err := m.ensurePodDir(pod, "containers", c.Name)
	if err != nil {
		return nil, fmt.Errorf("terminationMessagePath: create directory: %w", err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	path := filepath.Join(dir, hex.EncodeToString(id[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("terminationMessagePath: create file: %w", err)
	}
	f.Close()
	// The container's user may differ from the agent's: it owns the file
	// when the spec says who it is, else every user may write it (as the
	// kubelet makes it, 0666), reachable only through the pod's 0750
	// directories.
	uid, known := runAsUser(pod, c)
	if _, err := setOwnerMode(path, uid, known, ownedFileMode, sharedFileMode); err != nil {
		return nil, fmt.Errorf("terminationMessagePath: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path}, nil
}

// messageCache keeps the termination messages of exited containers (an
// exited container never changes), so a status read does not read files
// again for every dead instance.
type messageCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *messageCache) get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[id]
	return s, ok
}

func (c *messageCache) put(id, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedMessages {
		c.m = map[string]string{}
	}
	c.m[id] = msg
}

// terminationMessage is what an exited container left for its status, as
// the kubelet reads it: the last 4 KiB of the file mounted at
// terminationMessagePath; with FallbackToLogsOnError and a failed exit
// and no message in the file, the last 80 lines (at most 2 KiB) of its
// log. A file not written since the container was created is empty (on a
// runtime without mounts the path may be shared).
func (m *Manager) terminationMessage(s *runtimeapi.ContainerStatus) string {
	if msg, ok := m.messages.get(s.GetId()); ok {
		return msg
	}
	a := s.GetAnnotations()
	path := a[AnnotationTerminationMessagePath]
	fallback := a[AnnotationTerminationMessagePolicy] == string(v1.TerminationMessageFallbackToLogsOnError) &&
		s.GetExitCode() != 0 && s.GetReason() != "ContainerCannotRun" && s.GetReason() != "StartError"
	msg, checkLogs := "", fallback
	if path != "" {
		for _, mt := range s.GetMounts() {
			if mt.GetContainerPath() != path {
				continue
			}
			data, err := readTail(mt.GetHostPath(), maxTerminationMessage, unixNanoTime(s.GetCreatedAt()))
			switch {
			case os.IsNotExist(err):
			case err != nil:
				msg, checkLogs = fmt.Sprintf("Error on reading termination log %s: %v", mt.GetHostPath(), err), false
			default:
				msg, checkLogs = string(data), fallback && len(data) == 0
			}
			break
		}
	}
	if checkLogs {
		msg = logTail(s.GetLogPath())
	}
	m.messages.put(s.GetId(), msg)
	return msg
}

// readTail reads at most max bytes from the end of path; a file last
// modified before since reads as empty.
func readTail(path string, max int64, since time.Time) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if !since.IsZero() && fi.ModTime().Before(since.Truncate(time.Second)) {
		return nil, nil
	}
	off := max64(fi.Size()-max, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, max))
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// logTail is the content of the last lines of a CRI-format log (each line
// "<time> <stream> <P|F> <content>"; P marks a partial line continued on
// the next), at most maxTerminationLogLines lines and the last
// maxTerminationLogBytes bytes.
func logTail(path string) string {
	if path == "" {
		return ""
	}
	data, err := readTail(path, logTailWindow, time.Time{})
	if err != nil || len(data) == 0 {
		return ""
	}
	raw := bytes.Split(data, []byte("\n"))
	if len(data) == logTailWindow && len(raw) > 0 {
		raw = raw[1:] // the first line may be cut
	}
	var lines [][]byte
	var partial []byte
	for _, l := range raw {
		fields := bytes.SplitN(l, []byte(" "), 4)
		if len(fields) < 3 {
			continue
		}
		content := []byte{}
		if len(fields) == 4 {
			content = fields[3]
		}
		partial = append(partial, content...)
		if string(fields[2]) == "P" {
			continue
		}
		lines = append(lines, append(partial, '\n'))
		partial = nil
	}
	if len(lines) > maxTerminationLogLines {
		lines = lines[len(lines)-maxTerminationLogLines:]
	}
	out := bytes.Join(lines, nil)
	if len(out) > maxTerminationLogBytes {
		out = out[len(out)-maxTerminationLogBytes:]
	}
	return string(out)
}

// limitTerminationMessages cuts every terminated message of the pod to its
// share of maxPodTerminationMessages, as the kubelet's status manager.
func limitTerminationMessages(pod *v1.Pod, s *v1.PodStatus) {
	per := maxPodTerminationMessages
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		per /= n
	}
	cut := func(st *v1.ContainerState) {
		if t := st.Terminated; t != nil && len(t.Message) > per {
			t.Message = t.Message[:per]
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			cut(&list[i].State)
			cut(&list[i].LastTerminationState)
		}
	}
}
