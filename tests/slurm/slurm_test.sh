#!/usr/bin/env bash
# The Slurm plugin on a real Slurm (Debian's slurmctld, slurmd, slurmdbd, munge, MariaDB) started
# on loopback in a temporary directory: two nodes (two slurmd), each with two GPUs declared as
# gres and the fake NVML behind them. Checks that
#   - a job without --gpu-power is untouched (no limit changed, nothing recorded);
#   - --gpu-power=150 caps the job's GPUs while it runs, and the limits are back after it;
#   - the job's GPU energy is in sacct's AdminComment and agrees with cap x GPUs x duration;
#   - scancel of a running job restores its caps, also after slurmd was restarted under it;
#   - a job on both nodes gets one cap on all its GPUs and its energy summed over the nodes;
#   - bad values are refused at submission with a clear message (a cap below any GPU's range with
#     the range), a cap with decimals reaches the GPUs as given, and no value drains a node;
#   - Slurm's GPU numbers are taken as device minor numbers (n2's NVML order is the reverse);
#   - dcgm-exporter's job mapping files (dcgm_job_map=): each GPU's file, named by its NVML index,
#     lists the job while it runs, with or without --gpu-power; they are gone after it;
#   - after a node reboots under a job, the restore at boot empties the journal and ends the job;
#   - --gpu-power=study studies a job that marks its steps, applies and keeps the decision (a later
#     auto job finds it), stops at scancel, and decides nothing without step markers; a study job
#     on both nodes with one server run store is studied on n1 alone and ends on one cap on both;
#   - an auto job on n2 gets that study's cap from the server store; with the server stopped an auto
#     job starts within 5 s at n2's cached cap, and its record and energy reach the server after.
# Node n1 changes limits directly (the journal), node n2 through its node agent (regimed).
# Usage: slurm_test.sh REGIME_BINARY SPANK_PLUGIN FAKE_NVML_LIBRARY REGIMED_BINARY. Exit 77 (skipped) only where
# Slurm cannot run: not root, or the Slurm, munge or MariaDB programs are missing.
set -euo pipefail
regime_bin=$(realpath "$1") plugin=$(realpath "$2") fake_nvml=$(realpath "$3") regimed_bin=$(realpath "$4")
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs jobs as their users and the plugin changes limits as root"
for p in munged slurmctld slurmd slurmdbd mariadbd mariadb-install-db sacct sacctmgr srun sbatch; do
  command -v "$p" >/dev/null || skip "$p is not installed (scripts/deps.sh installs Slurm, munge and MariaDB)"
done
[ -f "$plugin" ] || skip "the SPANK plugin $plugin was not built (libslurm-dev missing)"

source "$here/cluster.sh"
T=$(mktemp -d /tmp/regime-slurm.XXXXXX)
chmod 755 "$T"
finish() {
  local rc=$?
  cluster_stop
  stop_agent
  if [ "$rc" -ne 0 ]; then
    echo "--- slurmd logs (regime lines) ---"
    grep -h "regime" "$T"/c/log/slurmd-*.log 2>/dev/null | tail -40 || true
  fi
  [ -n "${KEEP_SLURM_TEST_DIR:-}" ] || rm -rf "$T"
}
trap finish EXIT

fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }

# Each node's GPUs: two busy H200s (demand above every cap, so power follows the cap). On n1 NVML's
# order is the device files' (nvml:0 is /dev/nvidia0); on n2 it is the reverse (nvml:0 has device
# minor number 1), as on machines whose PCI order differs from the driver's numbering.
for node in n1 n2; do
  if [ $node = n1 ]; then m0=0 m1=1; else m0=1 m1=0; fi
  cat >"$T/nvml-$node.json" <<JSON
{"gpus": [
  {"name": "NVIDIA H200", "uuid": "GPU-$node-0", "min_limit_W": 100, "max_limit_W": 700,
   "default_limit_W": 700, "idle_W": 80, "demand_W": 690, "minor": $m0},
  {"name": "NVIDIA H200", "uuid": "GPU-$node-1", "min_limit_W": 100, "max_limit_W": 700,
   "default_limit_W": 700, "idle_W": 80, "demand_W": 690, "minor": $m1}]}
JSON
done
# regime as the node sees it: the node's fake GPUs, journal and run store (the prolog, the
# epilog and the jobs' own commands all find the node in SLURMD_NODENAME).
cat >"$T/regime" <<SH
#!/bin/sh
node=\${SLURMD_NODENAME:?}
export REGIME_NVML_LIBRARY=$fake_nvml FAKE_NVML_CONFIG=$T/nvml-\$node.json \\
  FAKE_NVML_STATE=$T/nvml-state-\$node.json REGIME_SYSTEM_STATE_DIR=$T/system-\$node \\
  REGIME_STATE_DIR=$T/state-\$node REGIME_AGENT_SOCKET=$T/agent-\$node.sock \\
  REGIME_BOOT_ID_FILE=$T/boot-id-\$node
exec \${REGIME_EXEC:-$regime_bin} "\$@"
SH
chmod 755 "$T/regime"
# Each node's boot (the kernel's boot id); a "reboot" below gives n2 a new one.
for node in n1 n2; do echo "$node-boot-1" >"$T/boot-id-$node"; done
on() { SLURMD_NODENAME=$1 "$T/regime" "${@:2}"; }
# The limits of a node's GPUs, as "W W".
limits() { on "$1" limit show --device nvml:all --json | python3 -c '
import json, sys
print(" ".join("%g" % g["current_limit_W"] for g in json.load(sys.stdin)))'; }

# n2's node agent, with n2's GPUs, journal and an empty policy (root may do everything).
: >"$T/regimed.policy"
agent_pid=""
start_agent() {
  SLURMD_NODENAME=n2 REGIME_EXEC=$regimed_bin "$T/regime" --socket "$T/agent-n2.sock" \
    --policy "$T/regimed.policy" >>"$T/regimed.log" 2>&1 &
  agent_pid=$!
  cluster_wait "[ -S '$T/agent-n2.sock' ] && on n2 agent request '{\"op\":\"report\"}'" 20 ||
    fail "regimed did not start: $(cat "$T/regimed.log")"
}
stop_agent() { [ -z "$agent_pid" ] || { kill -TERM "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null || true; }; }

started=$SECONDS
# dcgm-exporter's job mapping directories, one a node (both nodes' slurmd run on this host).
maps="$T/dcgm-jobs"
mkdir -p "$maps/n1" "$maps/n2"
chmod 755 "$maps/n1" "$maps/n2"
cluster_start "$T/c" "required $plugin regime=$T/regime steps=$T/steps study_probe_s=5 dcgm_job_map=$maps/%n" n1 n2 || fail "the test cluster did not start"
start_agent
echo "cluster and n2's agent up in $((SECONDS - started)) s"

# Waits until the job has left the queue: its epilog has finished on every node.
wait_gone() {
  cluster_wait "[ -z \"\$(squeue -h -j $1 2>/dev/null)\" ]" 60 || fail "job $1 still in the queue: $(squeue -j "$1")"
}
comment() { sacct -n -P -X -j "$1" -o AdminComment; }
job_in() { sed -n 's/^job=\([0-9]*\)$/\1/p' <<<"$1" | head -1; }
jobid_of() { sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p'; }

# 1. Bad values: refused before the job is queued.
if out=$(srun --gpu-power=fast true 2>&1); then fail "--gpu-power=fast was accepted"; fi
grep -q "expected default, auto, study, a cap in watts" <<<"$out" || fail "unclear message: $out"
# A cap below any GPU's range, which %g once sent to the node as 1e-05 (job begin refused it and
# the node drained): refused at submission with the range.
if out2=$(srun --gpu-power=0.00001 true 2>&1); then fail "--gpu-power=0.00001 was accepted"; fi
grep -q "a cap must lie in \[1, 5000\] W, the widest range of any GPU" <<<"$out2" || fail "unclear message: $out2"
pass "bad values refused at submission: $(head -1 <<<"$out"); $(head -1 <<<"$out2")"

# 2. A job without the option: untouched.
out=$(timeout 60 srun -w n1 --gres=gpu:2 sh -c "echo job=\$SLURM_JOB_ID; for f in $maps/n1/*; do echo map \$(basename \$f) \$(cat \$f); done; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c '"current_limit_W": 700' <<<"$out")" -eq 2 ] || fail "untouched job saw: $out"
job=$(job_in "$out")
[ "$(grep '^map ' <<<"$out")" = "map 0 $job"$'\n'"map 1 $job" ] || fail "job $job's mapping files during the job: $out"
wait_gone "$job"
[ -z "$(ls -A "$maps/n1")" ] || fail "mapping files left after job $job: $(ls -A "$maps/n1")"
[ "$(limits n1)" = "700 700" ] || fail "limits after job $job: $(limits n1)"
[ "$(ls "$T/system-n1/power-limits" 2>/dev/null | wc -l)" -eq 0 ] || fail "a job without --gpu-power left journal entries"
grep -q '"nodes": \[\]' <<<"$(on n1 job show --job "$job")" || fail "job $job was recorded: $(on n1 job show --job "$job")"
[ -z "$(comment "$job")" ] || fail "job $job got an AdminComment: $(comment "$job")"
pass "a job without --gpu-power: limits 700 700 during and after, nothing journaled or recorded; dcgm-exporter's mapping files 0 and 1 named it during, gone after"

# 3. A fixed cap: seen by the job, gone after, energy in sacct.
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=150 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json; sleep 3")
[ "$(grep -c '"current_limit_W": 150' <<<"$out")" -eq 2 ] || fail "job did not see 150 W on both GPUs: $out"
job=$(job_in "$out")
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] || fail "limits after job $job: $(limits n1)"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=[0-9.]* gpus=2 power=150 cap_w=150 nodes=n1:2:" <<<"$c" || fail "sacct AdminComment: '$c'"
# The fake GPUs draw their demand (690 W) until the cap is set and the cap after, plus a ripple of
# at most 2.3 W. The cap was set between the first counter read and `capped_at`, so the counters
# must lie between "capped all along" and "capped only at capped_at" over the record's times.
on n1 job show --job "$job" >"$T/job.json"
python3 - "$T/job.json" <<'PY' || fail "job $job: energy outside what cap x time allows"
import json, sys
rec = json.load(open(sys.argv[1]))["nodes"][0]["record"]
energy = rec["energy_J"]
lo = hi = 0.0
for g in rec["gpus"]:
    t0, t1, t2 = g["energy_start_unix_s"], g["capped_at_unix_s"], g["energy_end_unix_s"]
    lo += (150 - 2.3) * (t2 - t0)
    hi += (690 + 2.3) * (t1 - t0) + (150 + 2.3) * (t2 - t1)
print(f"energy {energy:.1f} J over {rec['duration_s']:.2f} s; cap x time allows [{lo:.1f}, {hi:.1f}] J")
sys.exit(0 if lo <= energy <= hi else 1)
PY
pass "--gpu-power=150: 150 150 during job $job, $(limits n1) after; sacct: $c"

# 3b. A cap with decimals reaches the GPUs as given (no %g rounding), and a workload name that
# looks like an option neither drains the node nor changes a limit.
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=262.125 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c '"current_limit_W": 262.125' <<<"$out")" -eq 2 ] || fail "job did not see 262.125 W on both GPUs: $out"
wait_gone "$(job_in "$out")"
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=auto --gpu-workload=--json sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c '"current_limit_W": 700' <<<"$out")" -eq 2 ] || fail "auto with workload --json: $out"
wait_gone "$(job_in "$out")"
node_state=$(sinfo -h -n n1 -o %t)
case "$node_state" in idle|mix|alloc) ;; *) fail "n1 is $node_state after --gpu-workload=--json" ;; esac
[ "$(limits n1)" = "700 700" ] || fail "limits after the 262.125 W and auto jobs: $(limits n1)"
pass "--gpu-power=262.125: 262.125 W on both GPUs; --gpu-workload=--json: 700 700, n1 $node_state"

# 4. scancel mid-job, with slurmd restarted under the running job first.
job=$(sbatch -w n1 --gres=gpu:2 --gpu-power=60% -o /dev/null --wrap "sleep 300" | jobid_of)
cluster_wait "[ \"\$(squeue -h -j $job -o %T)\" = RUNNING ]" 30 || fail "job $job did not start"
cluster_wait "[ \"\$(limits n1)\" = '420 420' ]" 30 || fail "job $job: limits $(limits n1), expected 420 420 (60% of 700 W)"
cluster_restart_slurmd n1 || fail "slurmd n1 did not come back"
[ "$(squeue -h -j "$job" -o %T)" = RUNNING ] || fail "job $job did not survive the slurmd restart"
[ "$(limits n1)" = "420 420" ] || fail "caps lost at the slurmd restart: $(limits n1)"
scancel "$job"
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] || fail "limits after scancel of job $job: $(limits n1)"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=[0-9.]* gpus=2 power=60% cap_w=420 nodes=n1:2:" <<<"$c" || fail "sacct AdminComment: '$c'"
[ "$(ls "$T/system-n1/power-limits" | wc -l)" -eq 0 ] || fail "journal entries left after scancel"
pass "scancel after a slurmd restart: 420 420 during, $(limits n1) after, journal empty; sacct: $c"

# 5. One job on both nodes: one cap on every GPU, the energy of both nodes summed.
out=$(timeout 60 srun -N2 -w n1,n2 --gres=gpu:1 --gpu-power=200 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json; sleep 2")
[ "$(grep -c '"current_limit_W": 200' <<<"$out")" -eq 2 ] || fail "two-node job did not see 200 W on one GPU of each node: $out"
job=$(job_in "$out" | head -1)
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] && [ "$(limits n2)" = "700 700" ] || fail "limits after the two-node job: $(limits n1) / $(limits n2)"
c=$(comment "$job")
python3 - "$c" <<'PY' || fail "two-node AdminComment: '$c'"
import re, sys
c = sys.argv[1]
m = re.match(r"regime gpu_energy_j=([0-9.]+) gpus=2 power=200 cap_w=200 nodes=n1:1:([0-9.]+),n2:1:([0-9.]+)$", c)
assert m, c
total, a, b = map(float, m.groups())
assert a > 0 and b > 0 and abs(total - (a + b)) < 0.15, (total, a, b)
print(f"per node {a} J + {b} J = {total} J")
PY
vias=$(for n in n1 n2; do on $n job show --job "$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["record"]["via"])'; done | tr '\n' ' ')
[ "$vias" = "journal regimed " ] || fail "two-node job: caps went through '$vias', expected n1 journal, n2 regimed"
pass "two nodes: 200 W on n1 (journal) and n2 (regimed) during, restored after; sacct: $c"

# 5b. Slurm's GPU numbers are device minor numbers: on n2 the job's gres GPU is the NVML GPU with
# that minor, which is not the NVML GPU of that index.
out=$(timeout 60 srun -w n2 --gres=gpu:1 --gpu-power=250 sh -c "echo job=\$SLURM_JOB_ID; echo gres=\${SLURM_JOB_GPUS:-\$SLURM_STEP_GPUS}; for f in $maps/n2/*; do echo map=\$(basename \$f):\$(cat \$f); done; \"$T/regime\" limit show --device nvml:all --json")
job=$(job_in "$out")
wait_gone "$job"
[ -z "$(ls -A "$maps/n2")" ] || fail "mapping files left after job $job: $(ls -A "$maps/n2")"
mapped=$(python3 - "$out" <<'PY'
import json, sys
lines = sys.argv[1].splitlines()
gres = int([l for l in lines if l.startswith("gres=")][0][5:])
gpus = json.loads("\n".join(l for l in lines if not l.startswith(("job=", "gres=", "map="))))
capped = [g for g in gpus if g["current_limit_W"] == 250]
assert len(capped) == 1, gpus
g = capped[0]
assert g["minor_number"] == gres and g["index"] != gres, (gres, gpus)
# dcgm-exporter's mapping file is named by the NVML index (as DCGM numbers GPUs), not the minor.
job = [l for l in lines if l.startswith("job=")][0][4:]
assert [l for l in lines if l.startswith("map=")] == [f"map={g['index']}:{job}"], lines
assert all(o["current_limit_W"] == 700 for o in gpus if o is not g), gpus
print(f"SLURM_JOB_GPUS={gres}: {g['device']} (minor {g['minor_number']}) capped at 250 W")
PY
) || fail "job $job on n2 capped the wrong GPU: $out"
[ "$(limits n2)" = "700 700" ] || fail "limits after job $job: $(limits n2)"
pass "GPUs by minor number on n2: $mapped; $(limits n2) after"
# 6. auto: the decision kept in the node's run store for this GPU model and workload.
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=auto --gpu-workload=sim:resnet50 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c '"current_limit_W": 700' <<<"$out")" -eq 2 ] || fail "auto without a kept sweep changed a limit: $out"
wait_gone "$(job_in "$out")"
on n1 sweep --device sim:h200 --workload sim:resnet50 --strategy exhaustive --caps 700,600,500,400 \
  --objective energy --json >"$T/sweep.json"
decided=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["decision"]; print("%g" % d["cap_W"])' "$T/sweep.json")
[ "$decided" != 700 ] || fail "the simulated sweep kept the default; the auto check needs a cap"
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=auto --gpu-workload=sim:resnet50 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c "\"current_limit_W\": $decided" <<<"$out")" -eq 2 ] || fail "auto: the job did not see the kept decision $decided W: $out"
job=$(job_in "$out")
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] || fail "limits after the auto job: $(limits n1)"
why=$(on n1 job show --job "$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["record"]["gpus"][0]["why"])')
pass "auto: 700 W with no kept sweep; with sweep:1 kept ($decided W) the job ran at $decided W: $why"

# 7. n2's agent killed with SIGKILL under a capped job: restarted, it restores the caps itself,
# and the job's epilog still records its energy.
job=$(sbatch -w n2 --gres=gpu:2 --gpu-power=300 -o /dev/null --wrap "sleep 300" | jobid_of)
cluster_wait "[ \"\$(limits n2)\" = '300 300' ]" 30 || fail "job $job on n2: limits $(limits n2)"
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
[ "$(limits n2)" = "300 300" ] || fail "caps changed when the agent died: $(limits n2)"
start_agent
[ "$(limits n2)" = "700 700" ] || fail "the restarted agent did not restore: $(limits n2)"
scancel "$job"
wait_gone "$job"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=[0-9.]* gpus=2 power=300 cap_w=300 nodes=n2:2:" <<<"$c" || fail "sacct AdminComment: '$c'"
pass "regimed killed with SIGKILL under job $job: 300 300 held, restored by its restart, $(limits n2) after scancel; sacct: $c"

# 8. n2 reboots under a capped job: slurmd, the agent and the job's processes die with SIGKILL,
# the GPUs come back at their defaults with their energy counters restarted, /run is empty, and
# the boot id changes. The restore at boot (`regime restore`, deploy/systemd/regime-restore.service,
# before the agent and slurmd) empties the journal and ends the job's record; slurmd then starts.
job=$(sbatch -w n2 --gres=gpu:2 --gpu-power=250 --no-requeue -o /dev/null --wrap "sleep 300" | jobid_of)
cluster_wait "[ \"\$(limits n2)\" = '250 250' ]" 30 || fail "job $job on n2: limits $(limits n2)"
[ "$(ls "$T"/system-n2/jobs/*.json | wc -l)" -eq 1 ] || fail "job $job is not in n2's job journal: $(ls "$T/system-n2/jobs")"
pids=$(cluster_job_pids "$job")
[ -n "$pids" ] || fail "no process of job $job found"
echo "killing n2's slurmd, its agent and job $job's processes: $(for p in $pids; do tr '\0' ' ' </proc/$p/cmdline; echo -n '; '; done)"
cluster_kill_slurmd n2
kill -KILL "$agent_pid" $pids
wait "$agent_pid" 2>/dev/null || true
agent_pid=""
rm -f "$T/nvml-state-n2.json" "$T/agent-n2.sock"
rm -rf "$T/system-n2/locks"
echo "n2-boot-2" >"$T/boot-id-n2"
[ "$(limits n2)" = "700 700" ] || fail "the rebooted GPUs are not at their defaults: $(limits n2)"
[ "$(ls "$T/system-n2/power-limits" | wc -l)" -eq 2 ] || fail "the journal lost the job's caps: $(ls "$T/system-n2/power-limits")"
boot_out=$(on n2 restore) || fail "regime restore at boot failed: $boot_out"
echo "$boot_out"
grep -q "^ended job $job on n2: begun before this boot" <<<"$boot_out" || fail "the restore at boot did not end job $job: $boot_out"
[ "$(ls "$T/system-n2/power-limits" | wc -l)" -eq 0 ] || fail "journal entries left after the restore at boot"
[ -z "$(ls "$T"/system-n2/jobs/*.json 2>/dev/null)" ] || fail "job journal entries left after the restore at boot"
on n2 job show --job "$job" >"$T/job.json"
python3 - "$T/job.json" <<'PY' || fail "job $job's record after the reboot: $(cat "$T/job.json")"
import json, sys
row = json.load(open(sys.argv[1]))["nodes"][0]
rec = row["record"]
assert row["status"] == "done" and rec["rebooted"] is True and rec["energy_J"] is None, row
assert all(g["restored_by"] == "reboot" and g["energy_J"] is None for g in rec["gpus"]), rec
PY
start_agent
cluster_start_slurmd n2 || fail "slurmd n2 did not come back after the reboot"
[ "$(limits n2)" = "700 700" ] || fail "limits after the reboot: $(limits n2)"
# slurmctld ends the job once it notices that the node lost it (here, where the machine's own boot
# time did not change, about two minutes later); cancelling it is what an administrator does
# sooner. Its epilog then finds the record ended and writes the comment, energy unknown.
scancel "$job"
wait_gone "$job"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=unknown gpus=2 power=250 cap_w=250 nodes=n2:2:unknown$" <<<"$c" || fail "sacct AdminComment after the reboot: '$c'"
node_state=$(sinfo -h -n n2 -o %t)
case "$node_state" in idle|mix|alloc) ;; *) fail "n2 is $node_state after the reboot (a failed epilog drains it)" ;; esac
[ "$(limits n2)" = "700 700" ] || fail "limits after job $job left the queue: $(limits n2)"
pass "n2 rebooted under job $job (250 250): defaults 700 700 after the boot, the restore at boot emptied the journal and ended the record (energy unknown); sacct: $c; n2 $node_state"

# 9. study: the job sends step markers (python/regime_step, to the REGIME_STEP_SOCKET the plugin
# exports); the study probes for 5 s at 700 W, sweeps, and leaves its decision set while the job
# runs; the decision is kept under the workload name, and a later auto job of it gets the cap.
cat >"$T/steps.py" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import regime_step
end = time.time() + float(sys.argv[2])
while time.time() < end:
    with regime_step.step():
        time.sleep(0.1)
PY
pydir=$(cd "$here/../../python" && pwd)
study_field() { on "$1" job show --job "$2" | python3 -c 'import json,sys; s=json.load(sys.stdin)["nodes"][0]["record"].get("study", {}); v=s.get(sys.argv[1]); print("" if v is None else ("%g" % v if isinstance(v, float) else v))' "$3"; }
job=$(sbatch -w n1 --gres=gpu:2 --gpu-power=study --gpu-workload=markers -o "$T/study-out.txt" --wrap "echo socket=\$REGIME_STEP_SOCKET; python3 $T/steps.py $pydir 300" | jobid_of)
cluster_wait "[ \"\$(study_field n1 $job outcome)\" = decided ]" 150 || fail "job $job: the study did not decide: $(on n1 job show --job "$job"; cat "$T"/system-n1/jobs/*.study.log)"
decided=$(study_field n1 "$job" cap_W)
[ "$(squeue -h -j "$job" -o %T)" = RUNNING ] || fail "job $job is not running after the study"
[ "$(limits n1)" = "$decided $decided" ] || fail "job $job: limits $(limits n1) after the study decided $decided W"
grep -q "^socket=$T/steps/$job.n1.sock$" "$T/study-out.txt" || fail "the job's REGIME_STEP_SOCKET: $(cat "$T/study-out.txt")"
why=$(study_field n1 "$job" why)
scancel "$job"
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] || fail "limits after the study job $job: $(limits n1)"
[ "$(ls "$T/system-n1/power-limits" | wc -l)" -eq 0 ] || fail "journal entries left after the study job"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=[0-9.]* gpus=2 power=study cap_w=$decided study=decided nodes=n1:2:" <<<"$c" || fail "sacct AdminComment of the study job: '$c'"
# The study ran on to the job's end (the epilog's SIGTERM): the whole job's figures in its record,
# the parts adding up to the job, the decided cap, the saving against the default 700 W.
whole=$(on n1 job show --job "$job" | python3 -c '
import json, sys
d = int(float(sys.argv[1]))
j = json.load(sys.stdin)["nodes"][0]["record"].get("job")
if not j: sys.exit("no whole-job figures")
parts = sum(j[k]["steps"] for k in ("probe", "profiling", "decided"))
if j["steps"] <= 0 or parts != j["steps"]: sys.exit("steps %s, parts %s" % (j["steps"], parts))
if j["decided"]["steps"] <= 0 or j["cap_W"] != d: sys.exit("decided %s at %s W" % (j["decided"], j["cap_W"]))
if j["reached"] != "decision" or j["saved_against"] != "default 700 W": sys.exit("reached %s, against %s" % (j["reached"], j["saved_against"]))
lo, hi = j["saved_ci_J"]
if not lo <= j["saved_J"] <= hi or j["profiling_extra_s"] is None: sys.exit("saved %s [%s, %s]" % (j["saved_J"], lo, hi))
print("%d steps, %.0f s, %.0f J, saved %.0f J [%.0f, %.0f] against the %s" % (j["steps"], j["seconds"], j["energy_J"], j["saved_J"], lo, hi, j["saved_against"]))
' "$decided") || fail "job $job: whole-job figures: $whole: $(on n1 job show --job "$job")"
out=$(timeout 60 srun -w n1 --gres=gpu:2 --gpu-power=auto --gpu-workload=markers sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
[ "$(grep -c "\"current_limit_W\": $decided" <<<"$out")" -eq 2 ] || fail "auto after the study: not $decided W: $out"
wait_gone "$(job_in "$out")"
auto_why=$(on n1 job show --job "$(job_in "$out")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["record"]["gpus"][0]["why"])')
pass "study: job $job ran at $decided W after its study ($why), 700 700 after scancel; the whole job: $whole; sacct: $c; a later auto job of the workload: $auto_why"

# 10. scancel during the study's sweep: the epilog stops the study, then restores.
job=$(sbatch -w n1 --gres=gpu:2 --gpu-power=study --gpu-workload=markers2 -o /dev/null --wrap "python3 $T/steps.py $pydir 300" | jobid_of)
# (its first probe is at the default, 700 W; the next one caps)
cluster_wait "[ \"\$(limits n1)\" != '700 700' ]" 60 || fail "job $job: the sweep did not cap: $(on n1 job show --job "$job")"
during=$(limits n1)
study_pid=$(sed -n "s/.*regime: job $job begin:   study: process \([0-9]*\) .*/\1/p" "$T"/c/log/slurmd-n1.log | tail -1)
[ -n "$study_pid" ] || fail "job $job: slurmd's log does not name the study process"
scancel "$job"
wait_gone "$job"
[ "$(limits n1)" = "700 700" ] || fail "limits after scancel during the study: $(limits n1)"
[ "$(study_field n1 "$job" outcome)" = interrupted ] || fail "job $job: study outcome $(study_field n1 "$job" outcome)"
state=$(awk '{print $3}' "/proc/$study_pid/stat" 2>/dev/null || echo gone)
case "$state" in gone|Z|X) ;; *) fail "the study process $study_pid of job $job still runs ($state)" ;; esac
[ "$(ls "$T/system-n1/power-limits" | wc -l)" -eq 0 ] || fail "journal entries left after scancel during the study"
pass "scancel during the study's sweep ($during): study $study_pid stopped ($state), $(limits n1) after; sacct: $(comment "$job")"

# 11. study without step markers: nothing decided, the limits left, and the comment says why.
job=$(sbatch -w n2 --gres=gpu:2 --gpu-power=study -o /dev/null --wrap "sleep 300" | jobid_of)
cluster_wait "[ \"\$(study_field n2 $job outcome)\" = no_step_markers ]" 60 || fail "job $job: study outcome '$(study_field n2 "$job" outcome)'"
[ "$(limits n2)" = "700 700" ] || fail "a study without step markers changed a limit: $(limits n2)"
scancel "$job"
wait_gone "$job"
c=$(comment "$job")
grep -q "^regime gpu_energy_j=[0-9.]* gpus=2 power=study study=no_step_markers nodes=n2:2:" <<<"$c" || fail "sacct AdminComment: '$c'"
pass "study without step markers on n2: 700 700 throughout; sacct: $c"

# 12. study on two nodes with one run store for the cluster (a database on the MariaDB server
# slurmdbd uses): n1, the first node of the job, studies; n2 waits for n1's decision in the store
# and sets the same cap on its GPUs (through its agent).
mariadb --no-defaults --socket="$T/c/run/mysql.sock" -u root -e "CREATE DATABASE regime;
  CREATE USER 'regime'@'127.0.0.1' IDENTIFIED BY 'regime-test-pw';
  GRANT ALL ON regime.* TO 'regime'@'127.0.0.1';"
printf '[client]\npassword = regime-test-pw\n' >"$T/db.cnf"
chmod 600 "$T/db.cnf"
uri="mariadb://regime@127.0.0.1:$(sed -n 's/^StoragePort=//p' "$T/c/etc/slurmdbd.conf")/regime?credentials=$T/db.cnf"
echo "required $plugin regime=$T/regime steps=$T/steps study_probe_s=5 db=$uri" >"$T/c/etc/plugstack.conf"
# A field of NODE's study of JOB in the server store.
server_study() { on "$1" job show --job "$2" --db "$uri" | python3 -c 'import json,sys
rows = [n for n in json.load(sys.stdin)["nodes"] if n["node"] == sys.argv[1]]
s = rows[0]["record"].get("study", {}) if rows else {}
v = s.get(sys.argv[2]); print("" if v is None else ("%g" % v if isinstance(v, float) else v))' "$1" "$3"; }
both_ended() { [ "$(server_study n1 "$1" outcome)" = decided ] && case "$(server_study n2 "$1" outcome)" in ""|running) false ;; esac; }
job=$(sbatch -N2 -w n1,n2 --gres=gpu:2 --gpu-power=study --gpu-workload=markers3 -o /dev/null --wrap "python3 $T/steps.py $pydir 300" | jobid_of)
cluster_wait "both_ended $job" 150 || fail "job $job: the two nodes' studies did not end: $(on n1 job show --job "$job" --db "$uri"; cat "$T"/system-n*/jobs/*.study.log)"
decided=$(server_study n1 "$job" cap_W)
[ "$(server_study n2 "$job" outcome)" = decided ] || fail "job $job: n2's study: $(server_study n2 "$job" outcome): $(server_study n2 "$job" why); the job's rows: $(on n1 job show --job "$job" --db "$uri")"
[ "$(limits n1)" = "$decided $decided" ] || fail "job $job: n1's limits $(limits n1), its study decided $decided W"
[ "$(limits n2)" = "$decided $decided" ] || fail "job $job: n2's limits $(limits n2), n1's study decided $decided W"
n2_why=$(server_study n2 "$job" why)
n2_log=$(grep "regime: job $job begin:.*nvml:0" "$T"/c/log/slurmd-n2.log | tail -1 | sed 's/.*regime: //')
scancel "$job"
wait_gone "$job"
[ "$(limits n1) $(limits n2)" = "700 700 700 700" ] || fail "limits after the two-node study job $job: $(limits n1) $(limits n2)"
c=$(comment "$job")
grep -q "study=decided nodes=n[12]:2:[0-9.]*,n[12]:2:[0-9.]*$" <<<"$c" || fail "sacct AdminComment of the two-node study job: '$c'"
pass "study on two nodes: job $job: n1 studied and decided $decided W; n2 ($n2_log): $n2_why; limits $decided on all four GPUs, 700 after scancel; sacct: $c"

# 13. auto on the other node, from the server store: n1's study of the job above kept its sweep
# there under the job's workload, and n2's own run store (a file) has no sweep of it; an auto job of
# that workload pinned to n2 gets the study's cap, and its record names the sweep.
study_job=$job
sweep_id=$(server_study n1 "$study_job" sweep_id)
[ -n "$sweep_id" ] || fail "job $study_job: n1's study kept no sweep id"
n2_runs=$(on n2 runs --json) || fail "regime runs on n2's own run store: $n2_runs"
! grep -q markers3 <<<"$n2_runs" || fail "n2's own run store has a sweep of markers3: the check below would not need the server"
auto_json_why() { python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["record"]["gpus"][0]["why"])'; }
out=$(timeout 60 srun -w n2 --gres=gpu:2 --gpu-power=auto --gpu-workload=markers3 sh -c "echo job=\$SLURM_JOB_ID; \"$T/regime\" limit show --device nvml:all --json")
job=$(job_in "$out")
[ "$(grep -c "\"current_limit_W\": $decided" <<<"$out")" -eq 2 ] || fail "auto on n2 after n1's study: not $decided W: $out"
wait_gone "$job"
auto_why=$(on n2 job show --job "$job" --db "$uri" | auto_json_why)
grep -q "^auto: sweep:$sweep_id decided $decided W" <<<"$auto_why" || fail "auto job $job on n2: '$auto_why', expected sweep:$sweep_id's $decided W"
[ "$(limits n2)" = "700 700" ] || fail "limits after the auto job $job on n2: $(limits n2)"
pass "auto on n2 from the server store: job $job ran at $decided W on both GPUs: $auto_why"

# 14. The server down (the cluster's MariaDB stopped) for a whole auto job on n2: it starts within
# 5 s, with the decision n2 read from the server before (its copy in n2's state folder); its prolog's
# and epilog's rows wait in n2's queue, and the next regime command on n2 once the server is back
# sends them, so the job's record and energy are in the server store.
cluster_db_stop
queue=$T/state-n2/server-store/127.0.0.1_$(sed -n 's/^StoragePort=//p' "$T/c/etc/slurmdbd.conf")_regime/queue
submitted=$(date +%s.%N)
job=$(sbatch -w n2 --gres=gpu:2 --gpu-power=auto --gpu-workload=markers3 -o /dev/null --wrap "date +%s.%N >$T/down-start.txt; sleep 300" | jobid_of)
cluster_wait "[ -s '$T/down-start.txt' ]" 30 || fail "job $job did not start with the server down: $(squeue -j "$job"; grep "job $job " "$T/c/log/slurmd-n2.log")"
began_s=$(python3 -c 'import sys; print("%.2f" % (float(open(sys.argv[1]).read()) - float(sys.argv[2])))' "$T/down-start.txt" "$submitted")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 5 else 1)' "$began_s" || fail "job $job began $began_s s after submission with the server down"
[ "$(limits n2)" = "$decided $decided" ] || fail "job $job with the server down: limits $(limits n2), expected the cached decision $decided W"
down_log=$(grep "regime: job $job begin:.*nvml:0" "$T/c/log/slurmd-n2.log" | tail -1 | sed 's/.*regime: //')
ended=$SECONDS
scancel "$job"
wait_gone "$job"
epilog_s=$((SECONDS - ended))
[ "$(limits n2)" = "700 700" ] || fail "limits after job $job: $(limits n2)"
queued=$(ls "$queue" 2>/dev/null | wc -l)
[ "$queued" -gt 0 ] || fail "job $job: nothing queued in $queue with the server down"
cluster_db_spawn || fail "the cluster's MariaDB did not start again"
on n2 runs --db "$uri" >/dev/null || fail "regime runs on n2 with the server back"
[ "$(ls "$queue" | wc -l)" -eq 0 ] || fail "n2's queue not sent after the server came back: $(ls "$queue")"
on n2 job show --job "$job" --db "$uri" >"$T/job.json"
energy=$(python3 - "$T/job.json" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["nodes"][0]
rec = row["record"]
assert row["status"] == "done" and rec["energy_J"] and rec["energy_J"] > 0, row
print("%.1f J" % rec["energy_J"])
PY
) || fail "job $job's record in the server store after it came back: $(cat "$T/job.json")"
pass "server down: auto job $job on n2 began $began_s s after submission at the cached $decided W ($down_log); scancel to gone $epilog_s s, $queued row(s) queued; server back, regime runs on n2 sent them: the record in the server store is done, energy $energy"

echo "all Slurm checks passed in $((SECONDS - started)) s"
