#!/usr/bin/env bash
# Runs the real crictl and critest (kubernetes-sigs/cri-tools) against the
# process runtime (`actorlet runtime`), inside new UTS, mount, IPC, PID and
# network namespaces: critest renames the host, bind-mounts over /etc and
# creates bridges otherwise. Needs root (unshare) and Go. Not run by CI;
# docs/cri-conformance.md records the last run.
#
# Namespaces do not protect the host's files (a chmod of / inside is a
# chmod of the host's /): the containers' filesystem views do. The script
# records the mode, owner and entries of /, /tmp, /etc, /dev, /var/log and
# /usr/share before the run and fails (exit 3) if any changed after it.
#
#   test/conformance/run-critest.sh [extra critest flags, e.g. --ginkgo.focus=Streaming]
#
# Environment:
#   CRI_TOOLS      a cri-tools checkout to use (default: cloned into $WORK)
#   CRI_TOOLS_REF  commit to check out when cloning (default: the one the
#                  conformance doc was written against)
#   WORK           scratch directory (default /var/tmp/actorlet-critest: not
#                  under /tmp, which every container sees as its pod's own,
#                  so the busybox applets below stay visible in them)
#   CHECK_TMP_ENTRIES  0 leaves /tmp's entries out of the host check (a
#                  shared machine where other work writes /tmp meanwhile;
#                  its mode and owner are still checked)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/var/tmp/actorlet-critest}
CHECK_TMP_ENTRIES=${CHECK_TMP_ENTRIES:-1}
CRI_TOOLS_REF=${CRI_TOOLS_REF:-ba03eabc}
CRI_TOOLS=${CRI_TOOLS:-$WORK/cri-tools}

if [ "$(id -u)" != 0 ]; then
	echo "run-critest: needs root (unshare of UTS, mount, IPC, PID and network namespaces)" >&2
	exit 1
fi
mkdir -p "$WORK/bin"

if [ ! -d "$CRI_TOOLS" ]; then
	git clone https://github.com/kubernetes-sigs/cri-tools "$CRI_TOOLS"
	git -C "$CRI_TOOLS" checkout --quiet "$CRI_TOOLS_REF"
fi
echo "cri-tools $(git -C "$CRI_TOOLS" rev-parse HEAD)"
(cd "$CRI_TOOLS" && go build -mod=vendor -o "$WORK/bin/crictl" ./cmd/crictl &&
	go test -mod=vendor -c -o "$WORK/bin/critest" ./cmd/critest)
(cd "$REPO" && go build -o "$WORK/bin/actorlet" ./cmd/actorlet)

# critest's containers run commands of its busybox image (top, sh -c,
# ipcs, ...); the process runtime runs host commands, so busybox's applets
# play the image: they come first in the runtime's PATH, which containers
# inherit. nsenter and unshare stay util-linux's (the runtime enters pod
# namespaces with nsenter).
if command -v busybox >/dev/null; then
	rm -rf "$WORK/busybox"
	mkdir -p "$WORK/busybox"
	busybox --install -s "$WORK/busybox"
	rm -f "$WORK/busybox/nsenter" "$WORK/busybox/unshare"
	export PATH="$WORK/busybox:$PATH"
else
	echo "run-critest: no busybox on this host: specs relying on busybox's top and friends will fail" >&2
fi

# What no spec may change on the host. /tmp's entries leave out this run's
# own directory.
host_state() {
	for d in / /tmp /etc /dev /var/log /usr/share; do
		stat -c '%n %a %U:%G' "$d"
		if [ "$d" = /tmp ]; then
			[ "$CHECK_TMP_ENTRIES" = 0 ] || ls -A "$d" | grep -vx "$(basename "$WORK")" | sed 's/^/  /' || true
		else
			ls -A "$d" | sed 's/^/  /'
		fi
	done
}
host_state >"$WORK/host-before.txt"

# Inside the namespaces: a loopback, a private /proc, the runtime, then
# crictl (a smoke test) and critest.
export WORK
status=0
unshare --uts --mount --ipc --pid --net --fork --mount-proc --propagation private bash -euo pipefail -c '
	ip link set lo up
	hostname actorlet-critest
	SOCK=unix://$WORK/cri.sock
	rm -rf "$WORK/state" "$WORK/cri.sock"
	"$WORK/bin/actorlet" runtime --listen "$SOCK" --root-dir "$WORK/state" >"$WORK/runtime.log" 2>&1 &
	for _ in $(seq 50); do [ -S "$WORK/cri.sock" ] && break; sleep 0.1; done
	CRICTL="$WORK/bin/crictl --runtime-endpoint $SOCK --image-endpoint $SOCK"
	$CRICTL version
	$CRICTL info >/dev/null
	$CRICTL pull busybox
	$CRICTL images
	status=0
	"$WORK/bin/critest" --runtime-endpoint "$SOCK" --image-endpoint "$SOCK" \
		--ginkgo.no-color --ginkgo.junit-report="$WORK/junit.xml" "$@" 2>&1 | tee "$WORK/critest.log" || status=$?
	grep -E "^(Ran|FAIL|PASS|SUCCESS)|Passed.*Failed" "$WORK/critest.log" | tail -3 || true
	echo "log: $WORK/critest.log  junit: $WORK/junit.xml  runtime log: $WORK/runtime.log"
	exit $status
' run-critest "$@" || status=$?

host_state >"$WORK/host-after.txt"
if ! diff -u "$WORK/host-before.txt" "$WORK/host-after.txt"; then
	echo "run-critest: the run changed the host (above: mode, owner or entries of /, /tmp, /etc, /dev, /var/log, /usr/share)" >&2
	exit 3
fi
echo "run-critest: the host is unchanged (mode, owner and entries of /, /tmp, /etc, /dev, /var/log, /usr/share)"
exit $status
