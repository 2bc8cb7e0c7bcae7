// Package procruntime is actorlet's embedded container runtime: a real CRI v1
// server (RuntimeService and ImageService over gRPC on a unix socket) that
// runs each container as a plain host process, like Nomad's raw_exec. It is
// the agent's default runtime on machines without containerd.
//
// How a container runs: StartContainer re-executes the runtime's own binary
// (/proc/self/exe, selected by an environment variable; "actorlet-shim
// <id>" in ps) as a detached per-container shim (its own session). The shim starts the container's
// command in its own process group, copies its stdout and stderr into the
// CRI log file (<RFC3339Nano> stdout|stderr F|P <line>), waits for it and
// records the exit code, finish time and reason atomically in the
// container's state directory. Exit codes, logs and the containers
// themselves therefore survive the agent and this server restarting: New on
// the same RootDir re-reads the records and re-adopts live shims, guarding
// against PID reuse with the start time in /proc/<pid>/stat. Programs that
// start this runtime must call MaybeRunShim first thing in main (and in
// TestMain).
//
// State layout under Options.RootDir (JSON records, written atomically):
//
//	sandboxes/<id>/config.json   PodSandboxConfig as given
//	sandboxes/<id>/record.json   state, creation time, boot ID
//	containers/<id>/config.json  ContainerConfig as given
//	containers/<id>/record.json  sandbox, times, shim and process identity;
//	                             "starting" from before the shim is forked
//	                             until the start is recorded
//	containers/<id>/shim.json    what the shim runs (argv, env, dir, log)
//	containers/<id>/shim.lock    flock'ed by the shim for its whole life
//	containers/<id>/started.json written by the shim once the process runs
//	containers/<id>/exit.json    exit code, reason, finish time
//	containers/<id>/shim.log     the shim's own diagnostics
//	containers/<id>/resources.json  resources set by UpdateContainerResources
//	sandboxes/<id>/holder.log    the namespace holder's diagnostics (isolation)
//	sandboxes/<id>/tmp, shm      the pod's /tmp and /dev/shm (filesystem views)
//	containers/<id>/view.json    the container's filesystem view (rootfs.go)
//	containers/<id>/rootfs       where its init builds the view (empty on the host)
//	attach/<id prefix>.sock      the shim's attach socket (attach.go)
//	images/<hex>.json            "pulled" image records
//
// Container lifecycle, as containerd reports it:
//
//	CREATED --StartContainer--> RUNNING --process exits / StopContainer--> EXITED
//	   \--StartContainer fails (e.g. no such binary): EXITED, 128, StartError
//
// A start is exactly once across crashes of the runtime (start.go): the
// intent is recorded before the fork, the shim records the process before
// reporting it, and New settles a start left half-done by adopting the
// process (its shim still holds shim.lock), recording its exit, or making
// the container CREATED again when no process ever ran; it never starts a
// container a second time.
//
// Exit 0 is reason Completed, any other exit Error; a process killed by a
// signal exits 128+signal. A shim that died without recording an exit
// (killed, or the machine rebooted) leaves the container EXITED with code
// 255 and reason Unknown.
//
// Isolation is optional (Options.Isolation, isolation.go): as root,
// per-sandbox UTS, IPC, mount and PID namespaces, a cgroup per container
// with its memory and CPU limits, and a filesystem view per container
// (rootfs.go: the host's root read-only, the mounts at their container
// paths, the pod's /dev, /proc and /tmp). Without it, containers run in the
// host's namespaces with no resource enforcement (limits are accepted and
// only recorded), and a mount that would need a view is refused unless
// Options.HostFilesystem keeps the host's filesystem as-is (ContainerStatus
// then reports each mount with its host path equal to its container path,
// which is what the process sees). There is no network namespace: every
// sandbox reports Options.HostIP.
// Containers run as the security context's user (credential.go), else as
// the runtime's. Images are not downloaded: PullImage only keeps a record
// under the normalised reference (image.go), ignoring its AuthConfig (no
// registry is contacted), and the image name is a label;
// the container's command must exist on the host. ImageStatus of an unknown
// image answers an empty response, as CRI specifies. The environment is
// the config's, plus PATH, HOME, HOSTNAME (and TERM=xterm with a tty)
// when the config does not set them; the working directory defaults to "/". Exec, Attach and
// PortForward go through the CRI streaming server (streaming.go); stats
// come from cgroups or /proc (stats.go); what is not supported is listed
// in UnsupportedRPCs (unsupported.go).
package procruntime
