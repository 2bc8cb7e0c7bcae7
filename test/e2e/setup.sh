#!/usr/bin/env bash
# Idempotent setup of a real containerd with CRI for actorlet's e2e suite:
# packages, config, a CNI bridge network, and locally built busybox and pause
# images (no registry is reachable here). Safe to run again: every step is
# skipped when already done. Needs root.
#
# Which containerd: ACTORLET_E2E_CONTAINERD=2 (the default) builds containerd
# $CONTAINERD2_VERSION and its runc shim from the Go module proxy (once, into
# $STATE/containerd-<version>/bin) and runs it on /run/containerd-2;
# ACTORLET_E2E_CONTAINERD=1.6 runs Debian's containerd 1.6 on
# /run/containerd. The two live side by side: separate sockets, roots, state
# directories, runc roots and CNI networks, so either can run (or both) and
# neither touches the other's metadata or pods. What a version's setup
# made is written to $STATE/containerd-<flavor>.env (endpoint, pid file, task
# directory, pod subnet), which the e2e suite (test/e2eenv), containerd.sh
# and the bench read.
#
# Facts this relies on: ../../../shared/docs/containerd.md (relative to the
# repo's parent), summarised in comments below.
set -euo pipefail

[ "$(id -u)" = "0" ] || { echo "setup.sh: must run as root (installs and starts containerd)" >&2; exit 1; }

STATE=${ACTORLET_E2E_STATE:-/var/lib/actorlet-e2e}
FLAVOR=${ACTORLET_E2E_CONTAINERD:-2}
# The newest containerd 2.x the module proxy serves that still supports
# cgroup v1 (this machine: hybrid, no systemd; 2.x deprecates v1 but keeps
# it until at least 2029, see its RELEASES.md).
CONTAINERD2_VERSION=v2.4.2
case "$FLAVOR" in
1.6)
  BIN=/usr/bin
  CONFIG=/etc/containerd/actorlet-e2e.toml
  ROOT=/var/lib/containerd
  RUNSTATE=/run/containerd
  CNI_DIR=/etc/cni/net.d
  NETWORK=actorlet-e2e BRIDGE=actorlet0 SUBNET=10.88.0.0/16
  LOGFILE=$STATE/containerd.log
  ;;
2)
  BIN=$STATE/containerd-$CONTAINERD2_VERSION/bin
  CONFIG=/etc/containerd/actorlet-e2e-2.toml
  ROOT=/var/lib/containerd-2
  RUNSTATE=/run/containerd-2
  CNI_DIR=/etc/cni/actorlet-e2e-2.d
  NETWORK=actorlet-e2e-2 BRIDGE=actorlet2 SUBNET=10.89.0.0/16
  LOGFILE=$STATE/containerd-2.log
  ;;
*) echo "setup.sh: ACTORLET_E2E_CONTAINERD=$FLAVOR: want 2 (containerd $CONTAINERD2_VERSION, the default) or 1.6" >&2; exit 2 ;;
esac
SOCK=$RUNSTATE/containerd.sock
PIDFILE=$RUNSTATE/actorlet-e2e.pid
CTR=$BIN/ctr
PAUSE_IMAGE=actorlet.local/pause:e2e
BUSYBOX_IMAGE=actorlet.local/busybox:e2e
LOCK=/run/actorlet-e2e-setup.lock
mkdir -p "$STATE" /etc/containerd "$CNI_DIR" "$RUNSTATE"

# Two copies must not run at once (whatever their flavor).
exec 9>"$LOCK"
flock 9

log() { echo "[e2e-setup] $*"; }

# 1. Packages. --no-install-recommends keeps criu and python out. runc
# (Debian's 1.1.5) serves both containerd versions' shims.
pkgs=(runc busybox-static containernetworking-plugins iptables)
[ "$FLAVOR" = 1.6 ] && pkgs+=(containerd)
need=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 1b. containerd 2.x: containerd, its runc shim and ctr built from the Go
# module proxy at the pinned version (the module has no replace directives,
# so go install pkg@version works), once: skipped when the binaries are
# there and report the version. CGO off, as containerd's static release
# builds the shim (no btrfs snapshotter, which needs cgo; overlayfs is used).
# The build goes to a temporary directory and is moved in whole, so a build
# cut short is never taken for a finished one.
build_containerd2() {
  local v=$CONTAINERD2_VERSION dir tmp ld start
  if [ -x "$BIN/containerd-shim-runc-v2" ] && [ -x "$BIN/ctr" ] &&
    "$BIN/containerd" --version 2>/dev/null | grep -qF " $v"; then
    return
  fi
  command -v go >/dev/null || { echo "setup.sh: building containerd $v needs the go command" >&2; exit 1; }
  dir=$(dirname "$BIN")
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/build.XXXXXX")
  ld="-X github.com/containerd/containerd/v2/version.Version=$v"
  log "building containerd $v from the Go module proxy into $BIN (2–4 min on 2 cores, once)"
  start=$(date +%s)
  (
    cd "$tmp"
    export GOBIN=$tmp/bin GOFLAGS=-buildvcs=false GOWORK=off CGO_ENABLED=0
    go install -trimpath -tags "urfave_cli_no_docs no_grpc" -ldflags "$ld" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$v"
    go install -trimpath -tags urfave_cli_no_docs -ldflags "$ld" \
      "github.com/containerd/containerd/v2/cmd/containerd@$v" \
      "github.com/containerd/containerd/v2/cmd/ctr@$v"
  ) || { rm -rf "$tmp"; echo "setup.sh: building containerd $v failed" >&2; exit 1; }
  rm -rf "$BIN"
  mv "$tmp/bin" "$BIN"
  rm -rf "$tmp"
  log "built containerd $v in $(( $(date +%s) - start )) s"
}
[ "$FLAVOR" = 2 ] && build_containerd2

# 2. Config. Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj and
# every RunPodSandbox fails, unless restrict_oom_score_adj is set.
capeff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
restrict=false
if (( (16#$capeff >> 24 & 1) == 0 )); then restrict=true; fi
snapshotter=overlayfs
# Registries: none is configured (no registry.config_path, no mirrors), so
# the CRI plugin's resolver applies its defaults, under which a loopback
# host (127.0.0.1:PORT, localhost) is pulled over plain HTTP (containerd
# 1.5+ CRI: defaultScheme). The pull-secret scenario's in-process registry
# (pullsecret_test.go, a random loopback port, basic auth) needs nothing
# more; credentials come with each PullImage from the pod's imagePullSecrets.
if [ "$FLAVOR" = 1.6 ]; then
cat > "$CONFIG.new" <<TOML
version = 2
root = "$ROOT"
state = "$RUNSTATE"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = $restrict
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snapshotter"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_DIR"
TOML
else
# Version 3 (containerd 2.0+; 2.3+ migrates it to 4 in memory at start, and
# derives the ttrpc socket from [grpc] address, so it stays beside ours
# instead of on 1.6's default). The CRI plugin is split: images (pinned
# sandbox image, snapshotter) and runtime (runtimes, CNI, OOM score). runc
# keeps its state under our state directory, not 1.6's /run/containerd/runc.
cat > "$CONFIG.new" <<TOML
version = 3
root = "$ROOT"
state = "$RUNSTATE"
[grpc]
  address = "$SOCK"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "$snapshotter"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = $restrict
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUNSTATE/runc"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$CNI_DIR"
TOML
fi
changed=false
if ! cmp -s "$CONFIG.new" "$CONFIG" 2>/dev/null; then mv "$CONFIG.new" "$CONFIG"; changed=true; else rm -f "$CONFIG.new"; fi

# 3. CNI: a bridge with host-local IPAM, one network per flavor in its own
# conf directory. Only the lexically first conf is loaded, hence the 10-
# prefix.
cat > "$CNI_DIR/10-$NETWORK.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "$NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON

# 4. Start containerd without systemd, unless ours is already serving.
cri_ready() {
  # crictl is not packaged here; the CRI Status check is done with ctr's
  # plugin list plus a socket probe.
  # The list is read whole before grep: grep -q quits at the first match,
  # and a ctr still writing (2.x lists many plugins) would die of SIGPIPE,
  # which pipefail turns into "not ready" (and a needless restart).
  local plugins
  [ -S "$SOCK" ] && "$CTR" --address "$SOCK" version >/dev/null 2>&1 &&
    plugins=$("$CTR" --address "$SOCK" plugins ls 2>/dev/null) &&
    grep -q 'io.containerd.grpc.v1 *cri *.* ok' <<<"$plugins"
}
running=false
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then running=true; fi
if $running && ! $changed; then
  # Alive but not answering (starting, or shutting down): give it a moment.
  for _ in $(seq 50); do cri_ready && break; sleep 0.1; done
  cri_ready || changed=true
fi
if $running && $changed; then
  log "restarting containerd (config changed or not answering)"
  kill "$(cat "$PIDFILE")" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break; sleep 0.1; done
  running=false
fi
if ! $running && ! cri_ready; then
  log "starting containerd $FLAVOR ($BIN/containerd)"
  # No inherited descriptor may outlive this script in the daemon: a lock
  # held by a caller (flock FILE make e2e) would be held by containerd forever.
  # The shell writes its own pid and execs containerd (env keeps the pid),
  # so the pid file names this containerd even when the other flavor's runs
  # too. PATH starts with BIN: containerd starts the shim it finds there,
  # its own version's.
  setsid -f sh -c 'echo $$ >"$0"; exec env PATH="$1" "$2" --config "$3"' \
    "$PIDFILE" "$BIN:$PATH" "$BIN/containerd" "$CONFIG" \
    >"$LOGFILE" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  for _ in $(seq 100); do
    cri_ready && break
    sleep 0.1
  done
fi
cri_ready || { echo "containerd did not become ready; log:" >&2; tail -30 "$LOGFILE" >&2; exit 1; }

# 5. Images from an OCI layout written by hand. Deterministic tars give
# stable digests, so an image already present is skipped.
build_image() { # name cmd-json entrypoint-json
  local name=$1 cmd=$2 entry=$3 dir
  if "$CTR" --address "$SOCK" -n k8s.io images ls -q 2>/dev/null | grep -x "$name" >/dev/null; then return; fi
  dir=$(mktemp -d)
  mkdir -p "$dir/rootfs/bin" "$dir/rootfs/etc" "$dir/rootfs/tmp" "$dir/rootfs/sbin" "$dir/rootfs/usr/bin" "$dir/layout/blobs/sha256"
  cp /bin/busybox "$dir/rootfs/bin/busybox"
  for a in $(/bin/busybox --list); do
    [ "$a" = busybox ] || ln -sf /bin/busybox "$dir/rootfs/bin/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$dir/rootfs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' > "$dir/rootfs/etc/group"
  chmod 1777 "$dir/rootfs/tmp"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir/rootfs" -cf "$dir/layer.tar" .
  local layer diffid cfg cfgdigest man mandigest
  diffid=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
  gzip -n -c "$dir/layer.tar" > "$dir/layer.tar.gz"
  layer=$(sha256sum "$dir/layer.tar.gz" | cut -d' ' -f1)
  cp "$dir/layer.tar.gz" "$dir/layout/blobs/sha256/$layer"
  cfg="{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"],\"Cmd\":$cmd,\"Entrypoint\":$entry},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diffid\"]}}"
  printf '%s' "$cfg" > "$dir/config.json"
  cfgdigest=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
  cp "$dir/config.json" "$dir/layout/blobs/sha256/$cfgdigest"
  man="{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$cfgdigest\",\"size\":$(stat -c %s "$dir/config.json")},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer\",\"size\":$(stat -c %s "$dir/layer.tar.gz")}]}"
  printf '%s' "$man" > "$dir/manifest.json"
  mandigest=$(sha256sum "$dir/manifest.json" | cut -d' ' -f1)
  cp "$dir/manifest.json" "$dir/layout/blobs/sha256/$mandigest"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$dir/layout/oci-layout"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"e2e"},"platform":{"architecture":"amd64","os":"linux"}}]}' \
    "$mandigest" "$(stat -c %s "$dir/manifest.json")" "$name" > "$dir/layout/index.json"
  tar --sort=name --mtime=@0 --owner=0 --group=0 -C "$dir/layout" -cf "$dir/image.tar" .
  log "importing $name"
  # ctr 2.x warns on every call that cgroup v1 is deprecated: only that is dropped.
  "$CTR" --address "$SOCK" -n k8s.io images import --snapshotter "$snapshotter" "$dir/image.tar" 2>&1 >/dev/null |
    { grep -v 'DEPRECATION: The support for cgroup v1' >&2 || true; }
  rm -rf "$dir"
  # The CRI plugin lists an imported image a moment later on a loaded machine.
  local i
  for i in $(seq 50); do
    "$CTR" --address "$SOCK" -n k8s.io images ls -q 2>/dev/null | grep -x "$name" >/dev/null && return
    sleep 0.2
  done
  echo "import of $name failed" >&2; exit 1
}
build_image "$BUSYBOX_IMAGE" '["sh"]' 'null'
build_image "$PAUSE_IMAGE" 'null' '["/bin/sleep","infinity"]'

# 6. What the suite, containerd.sh and the bench read (test/e2eenv).
cat > "$STATE/containerd-$FLAVOR.env.new" <<ENV
ACTORLET_E2E_CONTAINERD=$FLAVOR
VERSION=$("$BIN/containerd" --version | awk '{print $3}')
ENDPOINT=unix://$SOCK
PIDFILE=$PIDFILE
TASK_DIR=$RUNSTATE/io.containerd.runtime.v2.task/k8s.io
SUBNET=$SUBNET
LOG=$LOGFILE
ENV
mv "$STATE/containerd-$FLAVOR.env.new" "$STATE/containerd-$FLAVOR.env"

log "containerd $FLAVOR ready on unix://$SOCK (images $BUSYBOX_IMAGE, $PAUSE_IMAGE; $STATE/containerd-$FLAVOR.env)"
