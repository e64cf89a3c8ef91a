#!/usr/bin/env bash
# test_slurm.sh: the Slurm jobs end to end on a real single-node Slurm cluster
# that this test starts on this machine: Debian's munge, slurmctld and slurmd
# (installed with apt-get when missing), configured by the test (a private
# slurm.conf on free ports, a fresh munge key, 8 CPUs and 4 GPUs declared as
# generic resources so the jobs' #SBATCH lines are honoured as written) and
# torn down at the end.  It submits jobs/hopper.sbatch and
# jobs/blackwell.sbatch in compile-only mode over tests/cases with
# `sbatch --wait`, checks the archives they write, then exercises
# jobs/ci-gate.sh: inside a job against a baseline (pass), with a broken case
# file (fail), on crafted archives with planted regressions (fail, JUnit), and
# with a missing baseline (harness failure).
#   test_slurm.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
# Needs root (or sudo) to run the daemons; it fails, never skips, when it cannot.
set -euo pipefail
tool="$(realpath "$1")"; source_dir="$(realpath "$2")"; binary_dir="$(realpath "$3")"
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---------------------------------------------------------------- packages
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
    fail "the Slurm daemons need root: run as root or with password-less sudo"
  fi
  sudo="sudo -n"
fi
packages=(munge slurmctld slurmd slurm-client)
missing_packages=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing_packages+=("$package")
done
if [ ${#missing_packages[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || fail "no apt-get to install ${missing_packages[*]}"
  echo "test_slurm: installing ${missing_packages[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing_packages[@]}" >/dev/null
fi
plugin_dir=/usr/lib/x86_64-linux-gnu/slurm-wlm
if [ ! -d "$plugin_dir" ]; then
  plugin_dir="$(dirname "$(dpkg -L slurmd | grep '/proctrack_linuxproc.so$')")"
fi

# ------------------------------------------------------------------ set-up
work="$(mktemp -d "${binary_dir}/test-slurm.XXXXXX")"
# Short paths for the daemons' sockets (a unix socket path has 108 bytes).
state="$(mktemp -d /tmp/fv-slurm.XXXXXX)"
chmod 755 "$work" "$state"
daemon_pids=()
teardown() {
  local status=$?
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  local index
  for ((index = ${#daemon_pids[@]} - 1; index >= 0; index--)); do # slurmd first, munged last
    $sudo kill "${daemon_pids[index]}" 2>/dev/null || true
  done
  for pid in "${daemon_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    $sudo kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$state"/*.log "$work"/*.out; do
      [ -f "$log" ] && { echo "----- $log"; tail -30 "$log"; }
    done
  fi
  $sudo rm -rf "$state"
  rm -rf "$work"
  exit "$status"
}
trap teardown EXIT

# A TCP port nobody listens on.
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  fail "no free TCP port"
}

wait_for() { # wait_for SECONDS WHAT COMMAND...
  local seconds="$1" what="$2"
  shift 2
  for _ in $(seq $((seconds * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "$what did not come up within ${seconds}s"
}

host="$(hostname -s)"
user="$(id -un)"
controller_port="$(free_port)"
node_port="$(free_port)"
[ "$controller_port" != "$node_port" ] || node_port=$((controller_port + 1))

# munge: a fresh key, its own socket.
head -c 1024 /dev/urandom > "$state/munge.key"
chmod 400 "$state/munge.key"
$sudo munged --foreground --force --key-file="$state/munge.key" --socket="$state/munge.socket" \
    --pid-file="$state/munged.pid" --seed-file="$state/munged.seed" \
    --log-file="$state/munged.log" --num-threads=2 > "$state/munged.stdout.log" 2>&1 &
daemon_pids+=($!)
wait_for 20 munged test -S "$state/munge.socket"
munge --socket="$state/munge.socket" -n | unmunge --socket="$state/munge.socket" >/dev/null ||
  fail "munge cannot encode and decode a credential"

mkdir -p "$state/ctld" "$state/spool"
node_resources="CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1"
node_resources+=" RealMemory=2000 Gres=gpu:4"
export SLURM_CONF="$state/slurm.conf"
cat > "$SLURM_CONF" <<EOF
# A single-node cluster for test_slurm.sh.  Container-friendly plugins: no
# cgroups (proctrack/linuxproc, task/none, no accounting).
ClusterName=fvtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$controller_port
SlurmdPort=$node_port
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge.socket
CredType=cred/munge
PluginDir=$plugin_dir
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 $node_resources State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
# Four GPUs for --gpus-per-node.  Slurm drops GPUs without device files, so
# they are links to /dev/null (no cgroups constrain devices here); the jobs
# run compile-only.
mkdir -p "$state/dev"
for gpu in 0 1 2 3; do ln -s /dev/null "$state/dev/nvidia$gpu"; done
echo "NodeName=$host Name=gpu File=$state/dev/nvidia[0-3]" > "$state/gres.conf"

$sudo slurmctld -D -c -f "$SLURM_CONF" > "$state/slurmctld.stdout.log" 2>&1 &
daemon_pids+=($!)
wait_for 30 slurmctld scontrol ping
$sudo slurmd -D -f "$SLURM_CONF" -N "$host" > "$state/slurmd.stdout.log" 2>&1 &
daemon_pids+=($!)
node_idle() { sinfo -h -n "$host" -o '%T' | grep -qx idle; }
wait_for 60 "slurmd (node idle)" node_idle
echo "test_slurm: Slurm $(sinfo -V | cut -d' ' -f2) up on $host, ports $controller_port/$node_port"

# --------------------------------------------------------- the batch jobs
cd "$work"
shared="$work/shared"
# What every job sees: no modules here, the build's program, the test sweeps.
export FV_MODULES="" FV_ROOT="$source_dir" FV_BIN="$tool" FV_SHARED="$shared"
export FV_CASES="$source_dir/tests/cases" COMPILE_ONLY=1 FV_BASELINE=""
export FV_MPI_PLUGIN="${FV_TEST_MPI_PLUGIN:-pmix}"
# One rank per GPU on one node, scaled to this machine: 1 task, 1 GPU
# (FV_TEST_RANKS=N submits N ranks on the node).
ranks="${FV_TEST_RANKS:-1}"
# Under AddressSanitizer, leak checking is off for MPI-launched runs only:
# Open MPI itself leaks at exit (the single-process runs here keep it on).
mpi_asan_options="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
submit() { # submit SCRIPT -> job id; waits for the job; its status in $job_status
  set +e
  job_id="$(ASAN_OPTIONS="$mpi_asan_options" \
             sbatch --wait --parsable --ntasks-per-node="$ranks" --gpus-per-node="$ranks" \
                  --cpus-per-task=1 --time=00:10:00 --output="$work/%x-%j.out" "$1")"
  job_status=$?
  set -e
  job_id="${job_id%%;*}"
}

# The cases of a plain run (no Slurm), which the jobs must reproduce.
case_count=$("$tool" run "$source_dir/tests/cases" --compile-only -o "$work/plain.h5" \
               --kernel-cache "$work/plain-kernels" | grep -c '^compiled ')
[ "$case_count" -gt 10 ] || fail "the plain run compiled only $case_count cases"

rows_of() {
  h5dump -H -d /results "$1" | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' | grep -o '[0-9]*$'
}

for machine in hopper blackwell; do
  submit "$source_dir/jobs/$machine.sbatch"
  out="$work/fuservalidate-$machine-$job_id.out"
  if [ "$job_status" -ne 0 ]; then
    cat "$out" >&2 || true
    fail "$machine job $job_id: status $job_status"
  fi
  archive="$shared/archives/fuservalidate-$machine-$job_id.h5"
  [ -f "$archive" ] || fail "$machine: no archive named by the job id ($archive)"
  grep -q "HDF5_USE_FILE_LOCKING=FALSE" "$out" || fail "$machine: file locking not turned off"
  grep -q "compile-only for sm_" "$out" || fail "$machine: not a compile-only job"
  grep -q "^ci-gate: srun --mpi=$FV_MPI_PLUGIN " "$out" || fail "$machine: not run through srun"
  [ "$(rows_of "$archive")" -eq "$case_count" ] || fail "$machine: $(rows_of "$archive") rows"
  h5dump -a /mode "$archive" > "$work/$machine.mode"
  grep -q '"compile-only"' "$work/$machine.mode" || fail "$machine: mode is not compile-only"
  # The same cases as a plain run, every one compiled, through the archive reader.
  "$tool" compare "$work/plain.h5" "$archive" --junit "$work/$machine.xml" > "$work/$machine.cmp" ||
    { cat "$work/$machine.cmp"; fail "$machine: compare with the plain run failed"; }
  grep -q ' 0 new cases, 0 missing;' "$work/$machine.cmp" || fail "$machine: other cases"
  compiled=$(grep -c '<property name="status" value="compiled"/>' "$work/$machine.xml" || true)
  [ "$compiled" -eq "$case_count" ] || fail "$machine: $compiled of $case_count cases compiled"
  echo "test_slurm: $machine job $job_id: $case_count rows, all compiled"
done
if grep -q 'kernel changes (' "$work/hopper.cmp"; then
  fail "hopper (sm_90a) kernels differ from a plain run's"
fi
# (grep -q on a pipe would stop h5dump early: pipefail.)
h5dump -d /results "$archive" > "$work/blackwell.dump"
[ "$(grep -c '"sm_100a"' "$work/blackwell.dump")" -eq "$case_count" ] ||
  fail "blackwell did not compile every case for sm_100a"
hopper_archive="$(ls "$shared"/archives/fuservalidate-hopper-*.h5)"

# ---------------------------------------------------------- the CI gate
# 1. Inside a job, against the hopper archive as baseline: pass, with JUnit.
FV_BASELINE="$hopper_archive" submit "$source_dir/jobs/hopper.sbatch"
[ "$job_status" -eq 0 ] || fail "gate job $job_id: status $job_status (expected 0)"
junit="$shared/archives/junit-hopper-$job_id.xml"
grep -q "<testsuite name=\"fuservalidate\" tests=\"$case_count\" failures=\"0\" errors=\"0\"" \
    "$junit" || fail "gate job: JUnit report $junit"
grep -q "ci-gate: PASS" "$work/fuservalidate-hopper-$job_id.out" || fail "gate job did not pass"

# 2. Plainly, with a malformed case file among the good ones: fail (1).
mkdir -p "$work/mixed"
printf 'definition nowhere.py\nbogus line\n' > "$work/mixed/broken.sweep"
set +e
"$source_dir/jobs/ci-gate.sh" --bin "$tool" --launcher none --baseline "$hopper_archive" \
    --output "$work/mixed.h5" --junit "$work/mixed.xml" -- "$source_dir/tests/cases" \
    "$work/mixed" --compile-only --kernel-cache "$work/plain-kernels" > "$work/mixed.log" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/mixed.log"; fail "a broken case file: gate $status, not 1"; }
grep -q 'errors="1"' "$work/mixed.xml" || fail "the broken file is not an error in the JUnit report"

# 3. Through mpirun, one rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
set +e
ASAN_OPTIONS="$mpi_asan_options" \
  "$source_dir/jobs/ci-gate.sh" --bin "$tool" --launcher mpirun --ranks 1 \
    --baseline "$hopper_archive" --output "$work/mpirun.h5" --junit "$work/mpirun.xml" \
    -- "$source_dir/tests/cases" --compile-only --kernel-cache "$work/plain-kernels" \
    > "$work/mpirun.log" 2>&1
status=$?
set -e
[ "$status" -eq 0 ] || { cat "$work/mpirun.log"; fail "gate through mpirun: $status, not 0"; }

# 4. Crafted archives with planted regressions (check_regressions writes them).
mkdir -p "$work/crafted"
"$binary_dir/check_regressions" --write-fixtures "$work/crafted" > /dev/null
set +e
"$source_dir/jobs/ci-gate.sh" --bin "$tool" --compare-only --baseline "$work/crafted/old.h5" \
    --output "$work/crafted/new.h5" --junit "$work/crafted.xml" > "$work/crafted.log" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/crafted.log"; fail "planted regressions: gate $status, not 1"; }
grep -q 'regressions (1):' "$work/crafted.log" || fail "the planted regression was not reported"
grep -q 'failures="4" errors="1" skipped="1"' "$work/crafted.xml" || fail "crafted JUnit counts"
set +e
"$source_dir/jobs/ci-gate.sh" --bin "$tool" --compare-only --baseline "$work/crafted/old.h5" \
    --output "$work/crafted/new.h5" --junit "$work/lenient.xml" --threshold 30 > /dev/null 2>&1
lenient=$?
# 5. A missing baseline, a bad option: harness failures (2).
"$source_dir/jobs/ci-gate.sh" --bin "$tool" --compare-only --baseline "$work/none.h5" \
    --output "$work/crafted/new.h5" > /dev/null 2>&1
missing_baseline=$?
"$source_dir/jobs/ci-gate.sh" --bin "$tool" --bogus > /dev/null 2>&1
bogus=$?
"$source_dir/jobs/ci-gate.sh" --bin "$tool" -- tests/cases > /dev/null 2>&1
no_baseline=$?
set -e
[ "$lenient" -eq 1 ] || fail "threshold 30%: the new failures still fail the gate ($lenient)"
[ "$missing_baseline" -eq 2 ] || fail "a missing baseline: gate $missing_baseline, not 2"
[ "$bogus" -eq 2 ] || fail "a bad option: gate $bogus, not 2"
[ "$no_baseline" -eq 2 ] || fail "neither --baseline nor --no-baseline: gate $no_baseline, not 2"
echo "test_slurm: ok"
