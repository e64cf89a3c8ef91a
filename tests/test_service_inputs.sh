#!/usr/bin/env bash
# test_service_inputs.sh: bad input never loses results.  A malformed case
# file among good ones becomes an `error` row and the rest runs (exit 1, in
# one process and with two MPI ranks); an unwritable archive path, an
# existing archive without --resume, a missing --resume archive and
# conflicting options fail with exit 2 before any case runs; a file-size
# limit (as a full disk) ends the run with exit 2 and an archive h5dump
# still reads; the worker refuses to be started by hand.
#   test_service_inputs.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/service_common.sh"
work="$(mktemp -d "${binary_dir}/test-service-inputs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
options=(--compile-only --kernel-cache "$work/kernels")

mkdir -p "$work/mixed"
cp tests/cases/small_softmax.sweep tests/cases/small_rms.sweep "$work/mixed/"
sed -i "s#definition ../../cases/#definition $source_dir/cases/#" "$work/mixed/"*.sweep
printf 'definition nowhere.py\nbogus line\n' > "$work/mixed/broken.sweep"
good=$("$tool" run tests/cases/small_softmax.sweep tests/cases/small_rms.sweep "${options[@]}" \
           -o "$work/good.h5" | grep -c '^compiled ')

check_mixed() { # ARCHIVE LOG STATUS LABEL
  [ "$3" -eq 1 ] || { cat "$2" >&2; fail "$4: a malformed file gave exit status $3, not 1"; }
  [ "$(status_of "$1" broken/error)" = "$STATUS_ERROR" ] || fail "$4: no error row for broken.sweep"
  grep -q "broken.sweep:" "$2" || fail "$4: the malformed file is not named"
  [ "$(rows "$1" | awk -v ok=$STATUS_COMPILED '$2 == ok' | wc -l)" -eq "$good" ] ||
    fail "$4: not every good case ran"
  [ "$(row_count "$1")" -eq $((good + 1)) ] || fail "$4: $(row_count "$1") rows, not $((good + 1))"
}
set +e
"$tool" run "$work/mixed" "${options[@]}" -o "$work/mixed.h5" > "$work/mixed.log" 2>&1
status=$?
set -e
check_mixed "$work/mixed.h5" "$work/mixed.log" "$status" "one process"
set +e
mpi_run 2 "$tool" run "$work/mixed" "${options[@]}" -o "$work/mixed2.h5" > "$work/mixed2.log" 2>&1
status=$?
set -e
check_mixed "$work/mixed2.h5" "$work/mixed2.log" "$status" "two ranks"

# expect_harness_failure LABEL COMMAND...: exit 2, and no case ran.
expect_harness_failure() {
  local label="$1"; shift
  set +e
  "$@" > "$work/failure.log" 2>&1
  local status=$?
  set -e
  [ "$status" -eq 2 ] || { cat "$work/failure.log" >&2; fail "$label: exit status $status, not 2"; }
  ! grep -q -e '^compiled ' -e 'worker pid' "$work/failure.log" || fail "$label: cases ran"
  clean_log "$work/failure.log"
}
expect_harness_failure "unwritable archive" \
  "$tool" run tests/cases "${options[@]}" -o /proc/forbidden/run.h5
grep -q "/proc/forbidden/run.h5" "$work/failure.log" || fail "the unwritable path is not named"
expect_harness_failure "unwritable archive, 2 ranks" \
  mpi_run 2 "$tool" run tests/cases "${options[@]}" -o /proc/forbidden/run.h5
expect_harness_failure "existing archive" "$tool" run tests/cases "${options[@]}" -o "$work/good.h5"
grep -q -- "--resume" "$work/failure.log" ||
  fail "the existing-archive error does not mention --resume"
expect_harness_failure "missing --resume archive" \
  "$tool" run tests/cases "${options[@]}" --resume "$work/none.h5"
expect_harness_failure "-o and --resume differ" \
  "$tool" run tests/cases "${options[@]}" --resume "$work/good.h5" -o "$work/other.h5"
expect_harness_failure "bad --timeout" "$tool" run tests/cases "${options[@]}" --timeout soon
expect_harness_failure "bad --flush" "$tool" run tests/cases "${options[@]}" --flush sometimes \
  -o "$work/flush.h5"
grep -q -e "--flush is memset or read, not 'sometimes'" "$work/failure.log" ||
  fail "a bad --flush is not named"
# --flush read reaches the workers (compile-only: it changes nothing else)
"$tool" run tests/cases/small_rms.sweep "${options[@]}" --flush read -o "$work/flush-read.h5" \
  > "$work/flush-read.log" 2>&1 || { cat "$work/flush-read.log" >&2; fail "--flush read failed"; }
[ "$(attribute "$work/flush-read.h5" l2_flush)" = read ] || fail "the archive does not record --flush read"
[ "$(attribute "$work/good.h5" l2_flush)" = memset ] || fail "the archive does not record the memset flush"
expect_harness_failure "missing path" "$tool" run no/such/path "${options[@]}" -o "$work/x.h5"

# A file-size limit stands in for a full disk: the flush that does not fit
# is refused before it writes, so the archive keeps its last flush.
set +e
(ulimit -f 1024; exec "$tool" run tests/cases "${options[@]}" -o "$work/full.h5") 2>&1 |
  cat > "$work/full.log"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 2 ] ||
  { cat "$work/full.log" >&2; fail "a full disk gave exit status $status, not 2"; }
grep -q "no room for the next flush" "$work/full.log" || fail "the full disk is not reported"
h5dump "$work/full.h5" > /dev/null || fail "h5dump cannot read the archive of the full disk"

set +e
"$tool" worker --compile-only > "$work/worker.log" 2>&1 3>&-
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "started by" "$work/worker.log" ||
  fail "a worker started by hand ran"
clean_logs "$work"
echo "test_service_inputs: error row for a malformed file, exit 2 before any case on bad paths: ok"
