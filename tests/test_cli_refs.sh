#!/usr/bin/env bash
# test_cli_refs.sh: the refs command end to end on the small test sweeps:
# build, cached, a corrupt entry detected and rebuilt, a malformed case file
# among good ones (recorded as an error, the rest still run), exit statuses.
#   test_cli_refs.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
work="$(mktemp -d "${binary_dir}/test-cli-refs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$("$tool" refs tests/cases --refs "$work/refs" -j 2)" || fail "refs failed: $out"
echo "$out" | tail -1
built=$(echo "$out" | grep -c ' built ' || true)
[ "$built" -gt 10 ] || fail "expected more than 10 built entries, got $built"
[ "$(ls "$work/refs" | grep -c '\.h5$')" -eq "$built" ] || fail "one file per built case"

out="$("$tool" refs tests/cases --refs "$work/refs" -j 2)" || fail "second refs failed"
grep -q "^0 built, 0 rebuilt, $built cached" <<< "$out" || fail "second run not all cached: $(echo "$out" | tail -1)"

victim="$(ls "$work/refs"/*.h5 | head -1)"
head -c 3000 "$victim" > "$work/cut" && mv "$work/cut" "$victim"
out="$("$tool" refs tests/cases --refs "$work/refs" -j 2)" || fail "refs after corruption failed"
grep -q "rebuilt" <<< "$out" || fail "a truncated entry was not rebuilt"
grep -q "the stored entry was corrupt" <<< "$out" || fail "the corruption was not reported"

mkdir -p "$work/mixed"
cp tests/cases/small_softmax.sweep "$work/mixed/"
sed -i "s#definition ../../cases/#definition $source_dir/cases/#" "$work/mixed/small_softmax.sweep"
printf 'definition nowhere.py\nbogus line\n' > "$work/mixed/broken.sweep"
set +e
out="$("$tool" refs "$work/mixed" --refs "$work/refs" -j 2 2>&1)"; status=$?
set -e
[ "$status" -eq 1 ] || fail "a malformed file should give exit status 1, got $status"
grep -q "broken.sweep:" <<< "$out" || fail "the malformed file is not named: $out"
grep -q "softmax_fwd/bf16/17x256/s0" <<< "$out" || fail "the good cases did not run"

set +e
"$tool" refs tests/cases --refs /proc/forbidden/refs >/dev/null 2>&1; status=$?
"$tool" refs --no-such-option >/dev/null 2>&1; usage=$?
"$tool" refs no/such/path --refs "$work/refs" >/dev/null 2>&1; missing=$?
set -e
[ "$status" -eq 2 ] || fail "an unusable store should give exit status 2, got $status"
[ "$usage" -eq 2 ] || fail "a bad option should give exit status 2, got $usage"
[ "$missing" -eq 2 ] || fail "a missing path should give exit status 2, got $missing"
echo "test_cli_refs: ok"
