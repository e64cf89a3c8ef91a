#!/usr/bin/env bash
# test_service_reports.sh: the CI outputs of `run`.  --junit alone writes one
# testcase per case; --baseline compares the run with an earlier archive at
# the end: identical runs exit 0, a case that newly crashes exits 1 and is a
# new failure in the printed comparison and an error in the JUnit report,
# and kernels generated for another device are reported as changed (not a
# failure).  Timing regressions need a GPU; check_regressions covers the
# statistics on crafted archives.
#   test_service_reports.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/service_common.sh"
work="$(mktemp -d "${binary_dir}/test-service-reports.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
common=(--compile-only --kernel-cache "$work/kernels")
crashing=rms_norm_bwd/bf16/33x128/s0

# testcases FILE: <testcase> elements in a JUnit file.
testcases() { grep -c '<testcase ' "$1"; }

# error_for FILE CASE_ID: the case's <testcase> holds an <error>.
error_for() {
  awk -v id="$2" '
    index($0, "name=\"" id "\"") { inside = 1 }
    inside && /<error / { found = 1 }
    inside && /<\/testcase>/ { exit }
    END { exit !found }' "$1"
}

set +e
"$tool" run tests/cases "${common[@]}" -o "$work/old.h5" --junit "$work/old.xml" > "$work/old.log" 2>&1
status=$?
set -e
[ "$status" -eq 0 ] || { cat "$work/old.log" >&2; fail "baseline run exited $status"; }
cases=$(row_count "$work/old.h5")
[ "$(testcases "$work/old.xml")" -eq "$cases" ] || fail "JUnit: $(testcases "$work/old.xml") testcases for $cases cases"
grep -q '<testsuite name="fuservalidate" tests="'"$cases"'" failures="0" errors="0"' "$work/old.xml" ||
  fail "JUnit testsuite counts are wrong: $(grep -m1 '<testsuite ' "$work/old.xml")"

# The same run against itself: nothing new, exit 0.
set +e
"$tool" run tests/cases "${common[@]}" -o "$work/same.h5" --baseline "$work/old.h5" \
    --junit "$work/same.xml" > "$work/same.log" 2>&1
status=$?
set -e
[ "$status" -eq 0 ] || { cat "$work/same.log" >&2; fail "unchanged run exited $status"; }
grep -q "against the baseline $work/old.h5" "$work/same.log" || fail "no comparison printed"
grep -q 'summary: 0 new failures, 0 regressions, 0 improvements, 0 inconclusive, 0 kernel changes' \
  "$work/same.log" || fail "unchanged run: $(grep summary: "$work/same.log")"
[ "$(testcases "$work/same.xml")" -eq "$cases" ] || fail "JUnit of the compared run is incomplete"

# A case that now crashes: a new failure, exit 1, an error in JUnit.
set +e
FV_FAULT="abort:$crashing" "$tool" run tests/cases "${common[@]}" -o "$work/new.h5" \
    --baseline "$work/old.h5" --junit "$work/new.xml" > "$work/new.log" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/new.log" >&2; fail "run with a new crash exited $status"; }
grep -q 'summary: 1 new failure' "$work/new.log" || fail "new failure not reported: $(grep summary: "$work/new.log")"
error_for "$work/new.xml" "$crashing" ||
  fail "JUnit has no error for $crashing"
[ "$(attribute "$work/new.h5" exit_status)" = 1 ] || fail "archive exit_status is not 1"

# Kernels for another device: changed kernels are listed, not failures.
set +e
"$tool" run tests/cases "${common[@]}" --device B200 -o "$work/b200.h5" \
    --baseline "$work/old.h5" > "$work/b200.log" 2>&1
status=$?
set -e
[ "$status" -eq 0 ] || { cat "$work/b200.log" >&2; fail "run for another device exited $status"; }
summary=$(grep 'summary:' "$work/b200.log" || true)
[ -n "$summary" ] && grep -q -v ' 0 kernel changes' <<< "$summary" ||
  fail "no kernel change reported: $summary"

# A baseline that is not an archive fails before any case runs.
echo "not an archive" > "$work/bad.h5"
set +e
"$tool" run tests/cases "${common[@]}" -o "$work/none.h5" --baseline "$work/bad.h5" > "$work/bad.log" 2>&1
status=$?
set -e
[ "$status" -eq 2 ] || fail "a bad baseline exited $status, expected 2"
grep -q "$work/bad.h5" "$work/bad.log" || fail "the message does not name the bad baseline"
clean_logs "$work"
echo "test_service_reports: ok"
