#!/usr/bin/env bash
# test_service_resume.sh: SIGTERM to rank 0 partway through a run (slowed
# down by FV_FAULT=sleep) exits 143 and leaves a readable archive; --resume
# completes it with exactly the rows of an uninterrupted run (none twice,
# none missing); resuming a complete archive runs nothing.  Then the same
# with three MPI ranks.
#   test_service_resume.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/service_common.sh"
work="$(mktemp -d "${binary_dir}/test-service-resume.XXXXXX")"
trap '[ -n "${FV_KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
cd "$source_dir"
options=(--compile-only --kernel-cache "$work/kernels")

"$tool" run tests/cases "${options[@]}" -o "$work/whole.h5" > "$work/whole.log" 2>&1 ||
  fail "the uninterrupted run failed"
rows "$work/whole.h5" | sort > "$work/whole.rows"
total=$(wc -l < "$work/whole.rows")

# wait_for_cases LOG N PID: until LOG shows N finished cases (or PID ended).
wait_for_cases() {
  for _ in $(seq 1 300); do
    [ "$(grep -s -c '^compiled ' "$1" || true)" -ge "${2}" ] 2> /dev/null && return 0
    kill -0 "$3" 2> /dev/null || return 0
    sleep 0.1
  done
}

# check_resumed ARCHIVE LABEL: the archive has the rows of the whole run.
check_resumed() {
  rows "$1" | sort > "$work/resumed.rows"
  diff "$work/whole.rows" "$work/resumed.rows" > /dev/null ||
    fail "$2: resumed rows differ: $(diff "$work/whole.rows" "$work/resumed.rows" | head -5)"
  [ "$(row_count "$1")" -eq "$total" ] || fail "$2: $(row_count "$1") rows, not $total"
}

# One process: SIGTERM, then --resume.
FV_FAULT='sleep=0.15:*' "$tool" run tests/cases "${options[@]}" -o "$work/cut.h5" \
    > "$work/cut.log" 2>&1 &
pid=$!
wait_for_cases "$work/cut.log" 3 "$pid"
kill -TERM "$pid"
set +e
wait "$pid"
status=$?
set -e
[ "$status" -eq 143 ] ||
  { cat "$work/cut.log" >&2; fail "SIGTERM gave exit status $status, not 143"; }
h5dump "$work/cut.h5" > /dev/null || fail "h5dump cannot read the interrupted archive"
cut_rows=$(row_count "$work/cut.h5")
[ "$cut_rows" -ge 3 ] && [ "$cut_rows" -lt "$total" ] ||
  fail "interrupted archive has $cut_rows of $total rows"
[ "$(attribute "$work/cut.h5" exit_status)" -eq 143 ] || fail "exit_status attribute is not 143"
grep -q -- "--resume $work/cut.h5" "$work/cut.log" || fail "no hint to resume"
! command_running "fuservalidate worker.*--parent-pid=$pid " || fail "a worker outlived its rank"

"$tool" run tests/cases "${options[@]}" --resume "$work/cut.h5" > "$work/resume.log" 2>&1 ||
  { cat "$work/resume.log" >&2; fail "--resume failed"; }
grep -q "resuming: $cut_rows cases already finished" "$work/resume.log" ||
  fail "resume did not say what it skips"
check_resumed "$work/cut.h5" "one process"
[ "$(attribute "$work/cut.h5" resume_count)" -eq 1 ] || fail "resume_count is not 1"
[ "$(attribute "$work/cut.h5" exit_status)" -eq 0 ] || fail "exit_status after resume is not 0"

"$tool" run tests/cases "${options[@]}" --resume "$work/cut.h5" > "$work/again.log" 2>&1 ||
  fail "resuming a complete archive failed"
grep -q '^compiled ' "$work/again.log" && fail "resuming a complete archive ran cases again"
check_resumed "$work/cut.h5" "second resume"

# Three ranks: SIGTERM to every rank, as Slurm sends it at a time limit (mpirun
# itself, when signalled, kills its ranks about at once).  Rank 0 closes the
# archive; mpirun passes on its exit status.
FV_FAULT='sleep=0.3:*' mpi_run 3 "$tool" run tests/cases "${options[@]}" -o "$work/mpi.h5" \
    > "$work/mpi.log" 2>&1 &
pid=$!
wait_for_cases "$work/mpi.log" 3 "$pid"
launcher=$(children "$pid" mpirun)   # $pid is the subshell that runs mpi_run
for rank_pid in $(children "${launcher:-$pid}"); do kill -TERM "$rank_pid"; done
set +e
wait "$pid"
status=$?
set -e
[ "$status" -eq 143 ] ||
  { cat "$work/mpi.log" >&2; fail "3 ranks: SIGTERM gave exit status $status"; }
h5dump "$work/mpi.h5" > /dev/null || fail "h5dump cannot read the interrupted 3-rank archive"
mpi_rows=$(row_count "$work/mpi.h5")
[ "$mpi_rows" -lt "$total" ] || fail "the 3-rank run was not interrupted"
[ "$(attribute "$work/mpi.h5" exit_status)" -eq 143 ] || fail "3 ranks: exit_status is not 143"
set +e
mpi_run 3 "$tool" run tests/cases "${options[@]}" --resume "$work/mpi.h5" \
    > "$work/mpi-resume.log" 2>&1
status=$?
set -e
[ "$status" -eq 0 ] ||
  { cat "$work/mpi-resume.log" >&2; fail "3-rank --resume: exit status $status"; }
check_resumed "$work/mpi.h5" "three ranks"
clean_logs "$work"
echo "test_service_resume: stopped at $cut_rows and $mpi_rows of $total rows," \
     "resumed to exactly $total: ok"
