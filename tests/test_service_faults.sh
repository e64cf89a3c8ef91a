#!/usr/bin/env bash
# test_service_faults.sh: a GPU worker that aborts, exits or hangs on a case
# (FV_FAULT) is killed and replaced; that case is `crash` or `timeout`, every
# other case compiles, and the run exits 1.  Once in one process, once with
# three MPI ranks.
#   test_service_faults.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/service_common.sh"
work="$(mktemp -d "${binary_dir}/test-service-faults.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"

aborts=layer_norm_bwd/fp16/64x256/s0
exits=rms_norm_bwd/fp32/33x1987/s0
hangs=softmax_fwd/bf16/17x256/s0

# check_faulty LOG ARCHIVE STATUS FAULTED...: exit status 1, the faulted cases
# crashed (or timed out: hangs), every other row compiled, workers replaced.
check_faulty() {
  local log="$1" archive="$2" status="$3"; shift 3
  [ "$status" -eq 1 ] || { cat "$log" >&2; fail "exit status $status, expected 1"; }
  h5dump "$archive" > /dev/null || fail "h5dump cannot read $archive"
  local id
  for id in "$@"; do
    local expected=$STATUS_CRASH
    [ "$id" = "$hangs" ] && expected=$STATUS_TIMEOUT
    [ "$(status_of "$archive" "$id")" = "$expected" ] ||
      fail "$id has status '$(status_of "$archive" "$id")', expected $expected"
  done
  local others
  others=$(rows "$archive" | grep -v -e "^$aborts " -e "^$exits " -e "^$hangs " |
           awk -v ok=$STATUS_COMPILED '$2 != ok && printed++ < 3')
  [ -z "$others" ] || fail "other cases did not compile: $others"
  [ "$(rows "$archive" | wc -l)" -ge 20 ] || fail "rows are missing"
  [ "$(grep -c 'started a new GPU worker' "$log")" -ge "$#" ] ||
    fail "the worker was not replaced after each fault"
}

# The per-case timeout must only catch the hang: under ASan, on two cores
# busy with the compile sweeps, an honest case right after a worker restart
# once took more than 2 s.
set +e
FV_FAULT="abort:$aborts,exit:$exits,hang:$hangs" \
  "$tool" run --compile-only tests/cases -o "$work/one.h5" --kernel-cache "$work/kernels" \
      --timeout 20 > "$work/one.log" 2>&1
status=$?
set -e
check_faulty "$work/one.log" "$work/one.h5" "$status" "$aborts" "$exits" "$hangs"
grep -q "signal 6" "$work/one.log" || fail "the abort's signal is not reported"
grep -q "exited with status 3" "$work/one.log" || fail "the exit status is not reported"
grep -q "no result within 20 s (last stage: compile)" "$work/one.log" ||
  fail "the timeout and its stage are not reported"
grep -q "failures:" "$work/one.log" || fail "no failure list"
grep -q "repro\|--filter '$aborts'" "$work/one.log" || fail "no repro command for a failure"

set +e
FV_FAULT="abort:$aborts,exit:$exits" \
  mpi_run 3 "$tool" run --compile-only tests/cases -o "$work/three.h5" \
      --kernel-cache "$work/kernels" > "$work/three.log" 2>&1
status=$?
set -e
check_faulty "$work/three.log" "$work/three.h5" "$status" "$aborts" "$exits"
clean_logs "$work"
echo "test_service_faults: crashes and a timeout recorded, workers replaced, other cases ran: ok"
