#!/usr/bin/env bash
# Idempotent setup of a real containerd with CRI for actorlet's e2e suite:
# packages, config, a CNI bridge network, and locally built busybox and pause
# images (no registry is reachable here). Safe to run again: every step is
# skipped when already done. Needs root.
#
# Facts this relies on: ../../../shared/docs/containerd.md (relative to the
# repo's parent), summarised in comments below.
set -euo pipefail

[ "$(id -u)" = "0" ] || { echo "setup.sh: must run as root (installs and starts containerd)" >&2; exit 1; }

STATE=${ACTORLET_E2E_STATE:-/var/lib/actorlet-e2e}
SOCK=/run/containerd/containerd.sock
CONFIG=/etc/containerd/actorlet-e2e.toml
PAUSE_IMAGE=actorlet.local/pause:e2e
BUSYBOX_IMAGE=actorlet.local/busybox:e2e
LOCK=/run/actorlet-e2e-setup.lock
mkdir -p "$STATE" /etc/containerd /etc/cni/net.d /run/containerd

# Two copies must not run at once.
exec 9>"$LOCK"
flock 9

log() { echo "[e2e-setup] $*"; }

# 1. Packages. --no-install-recommends keeps criu and python out.
need=()
for p in containerd runc busybox-static containernetworking-plugins iptables; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

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
cat > "$CONFIG.new" <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
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
    conf_dir = "/etc/cni/net.d"
TOML
changed=false
if ! cmp -s "$CONFIG.new" "$CONFIG" 2>/dev/null; then mv "$CONFIG.new" "$CONFIG"; changed=true; else rm -f "$CONFIG.new"; fi

# 3. CNI: a bridge with host-local IPAM. Only the lexically first conf is
# loaded, hence the 10- prefix.
cat > /etc/cni/net.d/10-actorlet-e2e.conflist <<'JSON'
{
  "cniVersion": "0.4.0",
  "name": "actorlet-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "actorlet0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}]],
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
  [ -S "$SOCK" ] && ctr --address "$SOCK" version >/dev/null 2>&1 &&
    ctr --address "$SOCK" plugins ls 2>/dev/null | grep -q 'io.containerd.grpc.v1 *cri *.* ok'
}
pidfile=/run/containerd/actorlet-e2e.pid
running=false
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then running=true; fi
if $running && ! $changed; then
  # Alive but not answering (starting, or shutting down): give it a moment.
  for _ in $(seq 50); do cri_ready && break; sleep 0.1; done
  cri_ready || changed=true
fi
if $running && $changed; then
  log "restarting containerd (config changed or not answering)"
  kill "$(cat "$pidfile")" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  running=false
fi
if ! $running && ! cri_ready; then
  log "starting containerd"
  # No inherited descriptor may outlive this script in the daemon: a lock
  # held by a caller (flock FILE make e2e) would be held by containerd forever.
  setsid -f containerd --config "$CONFIG" >"$STATE/containerd.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  for _ in $(seq 100); do
    pid=$(pgrep -x containerd | head -1 || true)
    [ -n "$pid" ] && echo "$pid" > "$pidfile"
    cri_ready && break
    sleep 0.1
  done
fi
cri_ready || { echo "containerd did not become ready; log:" >&2; tail -30 "$STATE/containerd.log" >&2; exit 1; }

# 5. Images from an OCI layout written by hand. Deterministic tars give
# stable digests, so an image already present is skipped.
build_image() { # name cmd-json entrypoint-json
  local name=$1 cmd=$2 entry=$3 dir
  if ctr --address "$SOCK" -n k8s.io images ls -q 2>/dev/null | grep -x "$name" >/dev/null; then return; fi
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
  ctr --address "$SOCK" -n k8s.io images import --snapshotter "$snapshotter" "$dir/image.tar" >/dev/null
  rm -rf "$dir"
  # The CRI plugin lists an imported image a moment later on a loaded machine.
  local i
  for i in $(seq 50); do
    ctr --address "$SOCK" -n k8s.io images ls -q | grep -x "$name" >/dev/null && return
    sleep 0.2
  done
  echo "import of $name failed" >&2; exit 1
}
build_image "$BUSYBOX_IMAGE" '["sh"]' 'null'
build_image "$PAUSE_IMAGE" 'null' '["/bin/sleep","infinity"]'

log "containerd ready on unix://$SOCK (images $BUSYBOX_IMAGE, $PAUSE_IMAGE)"
