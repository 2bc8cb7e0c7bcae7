package actorcore

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlet/actorlet/actors/supervisor"
)

// processesWithEnv lists live (non-zombie) processes whose environment
// holds any of the given KEY=VALUE prefixes. Processes of other users, whose
// environment cannot be read, are skipped.
func processesWithEnv(prefixes ...string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil || !hasEnv(environ, prefixes) || zombie(ent.Name()) {
			continue
		}
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

func hasEnv(environ []byte, prefixes []string) bool {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		for _, p := range prefixes {
			if bytes.HasPrefix(kv, []byte(p)) {
				return true
			}
		}
	}
	return false
}

// zombie reports whether the process has exited and waits to be reaped (or
// is already gone).
func zombie(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:]))
	return len(fields) == 0 || fields[0] == "Z" || fields[0] == "X"
}

// podActors lists the live pod actors under the supervisor: registered
// processes named supervisor/<uid> other than its fixed children.
func podActors(sys *actor.ActorSystem, sup *actor.PID) []string {
	fixed := map[string]bool{supervisor.ChildPLEG: true, supervisor.ChildProber: true, supervisor.ChildStatus: true, supervisor.ChildEviction: true}
	var out []string
	for _, bucket := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, id := range bucket.Keys() {
			rest, ok := strings.CutPrefix(id, sup.Id+"/")
			if !ok || strings.Contains(rest, "/") || fixed[rest] {
				continue
			}
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}
