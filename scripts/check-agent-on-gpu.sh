#!/usr/bin/env bash
# The node agent on a real GPU (docs/agent.md): run as root on a machine with an NVIDIA GPU and a
# built tree. A throw-away user sets a cap on GPU 0 through regimed, with no root of its own; the
# cap is read back with nvidia-smi during the hold and after; a client killed with SIGKILL and the
# agent killed with SIGKILL are both restored. Everything is put back at the end, whatever fails.
#
#   sudo scripts/check-agent-on-gpu.sh [BUILD_DIR]      (default build/ci)
set -euo pipefail
build=${1:-build/ci}
regime=$(realpath "$build/regime")
regimed=$(realpath "$build/regimed")
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi" >&2; exit 2; }

work=$(mktemp -d /tmp/regime-agent-gpu.XXXXXX)
chmod 755 "$work"
user=rgmagent$$
agent_pid=
limit() { nvidia-smi -i 0 --query-gpu=power.limit --format=csv,noheader,nounits | tr -d ' '; }
original=$(limit)
cleanup() {
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
  REGIME_SYSTEM_STATE_DIR=$work/state "$regime" restore >/dev/null 2>&1 || true
  nvidia-smi -i 0 -pl "$original" >/dev/null 2>&1 || true
  userdel "$user" 2>/dev/null || true
  echo "GPU 0 power limit at the end: $(limit) W (was $original W)"
  rm -rf "$work"
}
trap cleanup EXIT
useradd -M -s /bin/sh "$user"

read -r min max def < <("$regime" limit show --device nvml:0 --json |
  python3 -c 'import json,sys; g=json.load(sys.stdin); print(g["min_limit_W"], g["max_limit_W"], g["default_limit_W"])')
cap=$(python3 -c "print(round(max($min, 0.7 * $def)))")
echo "GPU 0: range $min-$max W, default $def W, now $original W; the user may set $cap-$def W"
cat >"$work/regimed.policy" <<EOF
allow user $user gpus 0 min_W $cap max_W $def
EOF

start_agent() {
  REGIME_SYSTEM_STATE_DIR=$work/state "$regimed" --socket "$work/regimed.sock" \
    --policy "$work/regimed.policy" 2>>"$work/regimed.log" &
  agent_pid=$!
  for _ in $(seq 100); do [ -S "$work/regimed.sock" ] && return; sleep 0.1; done
  echo "regimed did not start:" >&2; cat "$work/regimed.log" >&2; exit 1
}
# setpriv and env exec regime, so "$!" of a command started with "${as_user[@]}" ... & is regime's pid.
as_user=(setpriv --reuid="$user" --regid="$user" --init-groups env HOME=/tmp
  REGIME_AGENT_SOCKET="$work/regimed.sock" "$regime")
start_agent

echo "== the user's cap through the agent"
"${as_user[@]}" limit set --device nvml:0 --watts "$cap" --actuate --hold 4 &
client=$!
sleep 2
during=$(limit)
wait "$client"
after=$(limit)
echo "during the hold: $during W; after: $after W"

echo "== refused beyond the policy"
"${as_user[@]}" limit set --device nvml:0 --watts "$((cap - 10))" --actuate --hold 1 || true

echo "== a client killed with SIGKILL"
"${as_user[@]}" limit set --device nvml:0 --watts "$cap" --actuate --hold 600 &
client=$!
sleep 2
before_kill=$(limit)
kill -9 "$client"; wait "$client" 2>/dev/null || true
sleep 0.5
echo "capped $before_kill W; 0.5 s after SIGKILL: $(limit) W"

echo "== the agent killed with SIGKILL, then started again"
"${as_user[@]}" limit set --device nvml:0 --watts "$cap" --actuate --hold 600 &
client=$!
sleep 2
kill -9 "$agent_pid"; wait "$agent_pid" 2>/dev/null || true
agent_pid=
echo "agent killed: $(limit) W; journal: $(ls "$work/state/power-limits")"
kill "$client" 2>/dev/null; wait "$client" 2>/dev/null || true
start_agent
echo "agent restarted: $(limit) W"
echo "== regimed's log"
cat "$work/regimed.log"
