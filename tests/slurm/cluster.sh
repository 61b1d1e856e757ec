# A Slurm cluster on loopback in one directory, for tests: munged, slurmdbd over a private MariaDB
# (so that sacct works), slurmctld and one slurmd per node (`slurmd -N NAME`, each with its own
# port, spool and log), each node with two GPUs declared as gres. Everything runs as root from
# $CLUSTER and is stopped by cluster_stop. Source it; nothing here touches /etc or systemd.
#
#   cluster_start DIR PLUGSTACK_LINE NODE...   e.g. cluster_start /tmp/c "required /x.so" n1 n2
#   cluster_stop
#
# Each node NAME gets character devices DIR/dev/NAME/nvidia0..1 (gres needs device files; these
# are /dev/null's and /dev/zero's numbers, so nothing real is behind them).

cluster_log() { echo "cluster: $*" >&2; }

# A TCP port nothing listens on, from a range the kernel does not hand out to clients.
cluster_free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    if ! ss -Htan "sport = :$port" | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# Waits up to $2 seconds for the command $1 to succeed.
cluster_wait() {
  local cmd=$1 limit=$2 start=$SECONDS
  until eval "$cmd" >/dev/null 2>&1; do
    if ((SECONDS - start >= limit)); then return 1; fi
    sleep 0.2
  done
}

cluster_pids=()

cluster_stop() {
  local pid
  # Jobs first, while slurmctld and slurmd still run their epilogs.
  if [ -n "${SLURM_CONF:-}" ] && scontrol ping 2>/dev/null | grep -q UP; then
    scancel -p debug 2>/dev/null || true
    cluster_wait "[ -z \"\$(squeue -h 2>/dev/null)\" ]" 30 || true
  fi
  # Newest first: slurmd, slurmctld, slurmdbd, mariadbd, munged.
  for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
    pid=${cluster_pids[i]}
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${cluster_pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  cluster_pids=()
  cluster_db_index=""
}

# Starts a process in the background with its output in a log, and remembers its pid.
cluster_spawn() {
  local log=$1
  shift
  "$@" >>"$log" 2>&1 &
  cluster_pids+=($!)
}

# Starts the cluster's MariaDB (slurmdbd's, on loopback at $CLUSTER_DB_PORT) and waits until it
# answers. Its pid keeps its place in cluster_pids, so cluster_stop stops it after slurmdbd.
cluster_db_index=""
cluster_db_spawn() {
  # Its own tmpdir: a starting server deletes every #sql* file in its tmpdir, so servers sharing
  # /tmp (the store's tests run beside this one) would delete each other's temporary tables.
  mkdir -p "$CLUSTER/dbtmp"
  cluster_spawn "$CLUSTER/log/mariadbd.log" mariadbd --no-defaults --datadir="$CLUSTER/db" \
    --tmpdir="$CLUSTER/dbtmp" --user=root --socket="$CLUSTER/run/mysql.sock" --bind-address=127.0.0.1 --port="$CLUSTER_DB_PORT" \
    --pid-file="$CLUSTER/run/mariadbd.pid" --skip-name-resolve --innodb-buffer-pool-size=32M \
    --log-error="$CLUSTER/log/mariadbd.err"
  if [ -n "$cluster_db_index" ]; then
    cluster_pids[cluster_db_index]=${cluster_pids[-1]}
    unset 'cluster_pids[-1]'
  else
    cluster_db_index=$((${#cluster_pids[@]} - 1))
  fi
  cluster_wait "mariadb --no-defaults --socket='$CLUSTER/run/mysql.sock' -u root -e 'select 1'" 60 ||
    { cluster_log "mariadbd did not start: $(tail -3 "$CLUSTER/log/mariadbd.err")"; return 1; }
}

# Stops the cluster's MariaDB (the server going down under slurmdbd and every node's run store);
# cluster_db_spawn starts it again on the same port and data.
cluster_db_stop() {
  local pid=${cluster_pids[cluster_db_index]}
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

cluster_start() {
  CLUSTER=$1
  local plugstack_line=$2
  shift 2
  CLUSTER_NODES=("$@")
  mkdir -p "$CLUSTER"/{munge,etc,log,run,spool,db,dev}
  chmod 700 "$CLUSTER/munge"
  head -c 1024 /dev/urandom >"$CLUSTER/munge/munge.key"
  chmod 400 "$CLUSTER/munge/munge.key"
  export SLURM_CONF=$CLUSTER/etc/slurm.conf
  local ctld_port dbd_port db_port
  ctld_port=$(cluster_free_port) && dbd_port=$(cluster_free_port) && db_port=$(cluster_free_port) ||
    { cluster_log "no free port"; return 1; }

  cluster_spawn "$CLUSTER/log/munged.out" munged -f --foreground \
    --socket="$CLUSTER/munge/sock" --key-file="$CLUSTER/munge/munge.key" \
    --log-file="$CLUSTER/log/munged.log" --pid-file="$CLUSTER/run/munged.pid" \
    --seed-file="$CLUSTER/munge/seed"
  cluster_wait "[ -S '$CLUSTER/munge/sock' ]" 20 || { cluster_log "munged did not start"; return 1; }

  # MariaDB in a private data directory, on loopback only, for slurmdbd alone. Its bootstrap
  # server has been seen to crash on a loaded 2-core machine: a fresh directory, up to three times.
  local installed=no attempt
  for attempt in 1 2 3; do
    rm -rf "$CLUSTER/db"
    if mariadb-install-db --no-defaults --datadir="$CLUSTER/db" --user=root \
      --auth-root-authentication-method=normal --skip-test-db >"$CLUSTER/log/mariadb-install.log" 2>&1; then
      installed=yes
      break
    fi
  done
  [ "$installed" = yes ] ||
    { cluster_log "mariadb-install-db failed three times: $(tail -3 "$CLUSTER/log/mariadb-install.log")"; return 1; }
  CLUSTER_DB_PORT=$db_port
  cluster_db_spawn || return 1
  mariadb --no-defaults --socket="$CLUSTER/run/mysql.sock" -u root -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'regime-test'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

  cat >"$CLUSTER/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$CLUSTER/munge/sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$CLUSTER/run/slurmdbd.pid
LogFile=$CLUSTER/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=regime-test
StorageLoc=slurm_acct_db
CONF
  chmod 600 "$CLUSTER/etc/slurmdbd.conf"

  local nodes_csv gres_conf=""
  nodes_csv=$(IFS=,; echo "${CLUSTER_NODES[*]}")
  cat >"$CLUSTER/etc/slurm.conf" <<CONF
ClusterName=regimetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$CLUSTER/munge/sock
CredType=cred/munge
StateSaveLocation=$CLUSTER/spool/ctld
SlurmdSpoolDir=$CLUSTER/spool/%n
SlurmctldPidFile=$CLUSTER/run/slurmctld.pid
SlurmdPidFile=$CLUSTER/run/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER/log/slurmctld.log
SlurmdLogFile=$CLUSTER/log/slurmd-%n.log
SlurmdDebug=${CLUSTER_SLURMD_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
SchedulerType=sched/builtin
PrologFlags=Alloc
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
# The MUNGE socket for talking to slurmdbd (slurm.conf(5)).
AccountingStoragePass=$CLUSTER/munge/sock
PlugStackConfig=$CLUSTER/etc/plugstack.conf
MinJobAge=2
CONF
  local port
  for node in "${CLUSTER_NODES[@]}"; do
    port=$(cluster_free_port) || return 1
    echo "NodeName=$node NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=1 RealMemory=500 Gres=gpu:2 State=UNKNOWN" \
      >>"$CLUSTER/etc/slurm.conf"
    mkdir -p "$CLUSTER/dev/$node" "$CLUSTER/spool/$node"
    mknod "$CLUSTER/dev/$node/nvidia0" c 1 3
    mknod "$CLUSTER/dev/$node/nvidia1" c 1 5
    gres_conf+="NodeName=$node Name=gpu File=$CLUSTER/dev/$node/nvidia[0-1]"$'\n'
  done
  echo "PartitionName=debug Nodes=$nodes_csv Default=YES MaxTime=INFINITE State=UP" >>"$CLUSTER/etc/slurm.conf"
  printf '%s' "$gres_conf" >"$CLUSTER/etc/gres.conf"
  echo "$plugstack_line" >"$CLUSTER/etc/plugstack.conf"

  cluster_spawn "$CLUSTER/log/slurmdbd.out" slurmdbd -D
  cluster_wait "sacctmgr -n list cluster" 60 ||
    { cluster_log "slurmdbd did not answer: $(tail -3 "$CLUSTER/log/slurmdbd.log")"; return 1; }
  sacctmgr -i add cluster regimetest >/dev/null
  cluster_spawn "$CLUSTER/log/slurmctld.out" slurmctld -D -c -f "$SLURM_CONF"
  cluster_wait "scontrol ping | grep -q UP" 30 ||
    { cluster_log "slurmctld did not start: $(tail -3 "$CLUSTER/log/slurmctld.log")"; return 1; }
  for node in "${CLUSTER_NODES[@]}"; do
    cluster_spawn "$CLUSTER/log/slurmd-$node.out" env CLUSTER_NODE="$node" slurmd -D -N "$node" -f "$SLURM_CONF"
  done
  cluster_wait "[ \$(sinfo -h -o '%t' -N | grep -c idle) -eq ${#CLUSTER_NODES[@]} ]" 60 ||
    { cluster_log "nodes not idle: $(sinfo -N 2>&1)"; return 1; }
}

# The processes of job $1 on this node machine: its slurmstepd (named "slurmstepd: [JOB.STEP]")
# and every process running with the job's SLURM_JOB_ID under this cluster's SLURM_CONF.
cluster_job_pids() {
  local job=$1 p env cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    env=$(tr '\0' '\n' 2>/dev/null <"$p/environ") || continue
    if [[ $cmd == "slurmstepd: [$job."* ]] ||
      { grep -qx "SLURM_JOB_ID=$job" <<<"$env" && grep -qx "SLURM_CONF=$SLURM_CONF" <<<"$env"; }; then
      echo "${p#/proc/}"
    fi
  done
}

# Kills one node's slurmd with SIGKILL (a crash, or the node losing power).
cluster_kill_slurmd() {
  local pid
  pid=$(cat "$CLUSTER/run/slurmd-$1.pid")
  kill -KILL "$pid"
  cluster_wait "! kill -0 $pid" 30
}

# Starts one node's slurmd (again) and waits until slurmctld has it back.
cluster_start_slurmd() {
  local node=$1
  cluster_spawn "$CLUSTER/log/slurmd-$node.out" env CLUSTER_NODE="$node" slurmd -D -N "$node" -f "$SLURM_CONF"
  cluster_wait "[ \"\$(sinfo -h -n $node -o %t)\" = alloc ] || [ \"\$(sinfo -h -n $node -o %t)\" = idle ] || [ \"\$(sinfo -h -n $node -o %t)\" = mix ]" 60
}

# Stops one node's slurmd and starts it again (jobs keep running under their slurmstepd).
cluster_restart_slurmd() {
  local node=$1 pid
  pid=$(cat "$CLUSTER/run/slurmd-$node.pid")
  kill -TERM "$pid"
  cluster_wait "! kill -0 $pid" 30 || return 1
  cluster_spawn "$CLUSTER/log/slurmd-$node.out" env CLUSTER_NODE="$node" slurmd -D -N "$node" -f "$SLURM_CONF"
  cluster_wait "[ \"\$(sinfo -h -n $node -o %t)\" = alloc ] || [ \"\$(sinfo -h -n $node -o %t)\" = idle ] || [ \"\$(sinfo -h -n $node -o %t)\" = mix ]" 30
}
