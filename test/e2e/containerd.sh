#!/usr/bin/env bash
# containerd.sh stop|start|restart: stop or (re)start the containerd that
# setup.sh runs (the flavor ACTORLET_E2E_CONTAINERD picks, as setup.sh), for
# the e2e scenario that restarts the runtime under a running agent. Pods
# (their shims) survive; start is setup.sh, which starts containerd again
# with the same config and waits until CRI answers.
set -euo pipefail
cd "$(dirname "$0")"
envfile=${ACTORLET_E2E_STATE:-/var/lib/actorlet-e2e}/containerd-${ACTORLET_E2E_CONTAINERD:-2}.env
[ -f "$envfile" ] || { echo "containerd.sh: $envfile missing: run setup.sh first" >&2; exit 1; }
pidfile=$(sed -n 's/^PIDFILE=//p' "$envfile")

stop() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { echo "containerd.sh: containerd not running" >&2; return 0; }
  kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  stop) stop ;;
  start) bash setup.sh ;;
  restart) stop; bash setup.sh ;;
  *) echo "usage: $0 stop|start|restart" >&2; exit 2 ;;
esac
