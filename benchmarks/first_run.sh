#!/usr/bin/env bash
# First run of a newcomer: a clean clone, `make demo`, time until the first snapshot prints.
#
#   benchmarks/first_run.sh [REV] [MAKEFILE_REV]
#
# Clones this repository at REV (default HEAD) into a temporary directory with empty pip, uv and
# numba caches, runs `make demo` and prints the seconds to the finished install and to the first
# snapshot, then the same for a second `make demo` in that clone. MAKEFILE_REV takes the Makefile
# from another revision (e.g. one that still installed with pip), so two installers can be
# compared side by side in the same minutes: run it twice, once with each. The embedded
# broker's binary (~/.calfkit/bin) is not cleared (`make clean` removes it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
dir=$(mktemp -d /tmp/anchorstream-first-run.XXXXXX)
trap 'pkill -KILL -f "$dir/" 2>/dev/null || true; rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/clone"
git -C "$dir/clone" checkout -q "$rev"
[ -n "${2:-}" ] && git -C "$dir/clone" checkout -q "$2" -- Makefile
cd "$dir/clone"

demo_until_snapshot() {  # $1: output file; prints "install_s first_snapshot_s"
  local start inst="" now
  start=$(date +%s.%N)
  PIP_CACHE_DIR="$dir/pip" UV_CACHE_DIR="$dir/uv" setsid make demo >"$1" 2>&1 &
  local pid=$!
  while sleep 0.3; do
    if [ -z "$inst" ] && [ -e .venv/.installed-demo ]; then inst=$(date +%s.%N); fi
    grep -q "snapshot [0-9]\+ ·" "$1" && break
    kill -0 "$pid" 2>/dev/null || { echo "make demo exited early; see $1" >&2; cat "$1" >&2; exit 1; }
  done
  now=$(date +%s.%N)
  kill -TERM -- "-$pid" 2>/dev/null || true
  sleep 3
  pkill -KILL -f "$dir/" 2>/dev/null || true
  echo "${inst:+$(echo "$inst - $start" | bc)} $(echo "$now - $start" | bc)"
}

read -r install first <<<"$(demo_until_snapshot "$dir/first.txt")"
read -r _ second <<<"$(demo_until_snapshot "$dir/second.txt")"
printf 'rev %s, Makefile %s: install %.1f s, clean clone to first snapshot %.1f s, second make demo %.1f s (load average %s)\n' \
  "$(git rev-parse --short HEAD)" "${2:-$rev}" "$install" "$first" "$second" "$(cut -d' ' -f1-3 /proc/loadavg)"
