#!/usr/bin/env bash
# test_gpu_cases.sh: on a machine with a GPU, every case of the small test
# sweeps (tests/cases: edge shapes included; tests/long_rows: rows no
# persistent budget holds; tests/chained: a second reduction level reading
# a row value of the first; tests/mixed_constants: row constants of another
# dtype than the rows; tests/odd_backward: multi-wave backward rows of an odd
# length) runs and passes against the fp64 references, and
# (where nvcc is) tests/nan_maximum.cu checks the NaN-propagating maximum and
# tests/exp_fast_accuracy.cu fv_exp_fast's error model.
# Without a GPU it prints SKIP and passes.  `ci/gpu-test` runs the
# same check over the whole default sweep (cases/).
#   test_gpu_cases.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU (nvidia-smi finds none); the GPU cases run on a GPU machine"
  exit 0
fi
work="$(mktemp -d "${binary_dir}/test-gpu-cases.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
"$tool" run tests/cases --require-gpu --repeats 3 -o "$work/gpu.h5" --refs "$work/refs" \
    --kernel-cache "$work/kernels" | tee "$work/log"
passed=$(grep -c '^pass ' "$work/log" || true)
[ "$passed" -ge 27 ] || { echo "FAIL: only $passed cases passed" >&2; exit 1; }
grep -q '^timing: median of 3 runs after 3 warm-up, the L2 emptied by a memset' "$work/log" ||
  { echo "FAIL: the log does not say how the cases were timed" >&2; exit 1; }
# every timed case is set beside a copy of its own bytes, timed the same way
sized=$(grep '^pass ' "$work/log" | grep -c '% of copy (.*% of one this size)' || true)
[ "$sized" -eq "$passed" ] ||
  { echo "FAIL: $sized of $passed passed cases have a sized copy" >&2; exit 1; }
grep -q 'median %size' "$work/log" ||
  { echo "FAIL: the summary has no median %size column" >&2; exit 1; }
# the read flush: the same cases pass, and the log and the archive say so;
# --no-sized-copy leaves the copy out
"$tool" run tests/cases/small_rms.sweep --require-gpu --repeats 3 --flush read --no-sized-copy \
    -o "$work/read.h5" --refs "$work/refs" --kernel-cache "$work/kernels" > "$work/read.log"
! grep -q 'of one this size' "$work/read.log" ||
  { echo "FAIL: --no-sized-copy still timed a sized copy" >&2; exit 1; }
grep -q '^timing: .*emptied by a read' "$work/read.log" ||
  { echo "FAIL: the log does not name the read flush" >&2; exit 1; }
[ "$(grep -c '^pass ' "$work/read.log")" -ge 1 ] && ! grep -q '^fail ' "$work/read.log" ||
  { echo "FAIL: cases failed with --flush read" >&2; cat "$work/read.log" >&2; exit 1; }
if command -v h5dump >/dev/null 2>&1; then
  grep -q '"read"' <<< "$(h5dump -a /l2_flush "$work/read.h5")" ||
    { echo "FAIL: the archive does not record the read flush" >&2; exit 1; }
else
  echo "test_gpu_cases: h5dump is not on PATH: the archive's l2_flush is not read back"
fi
# rows no persistent budget holds (tests/long_rows): one inner_multipass kernel
# each, in clusters of blocks where a row per SM outgrows the L2
"$tool" run tests/long_rows --require-gpu --repeats 3 -o "$work/long.h5" --refs "$work/refs" \
    --kernel-cache "$work/kernels" > "$work/long.log" || true  # (a failed case: the log below)
[ "$(grep -c '^pass .* 1 kernel ' "$work/long.log")" -eq 4 ] ||
  { echo "FAIL: the long rows did not all pass in one kernel" >&2; cat "$work/long.log" >&2; exit 1; }
# every_case_passes NAME DIR COUNT [ARGS...]: DIR's COUNT cases (run with
# ARGS) all pass against fp64; a failed run's log is printed
every_case_passes() {
  local name="$1" dir="$2" count="$3"
  shift 3
  "$tool" run "$dir" "$@" --require-gpu --repeats 3 -o "$work/$name.h5" --refs "$work/refs" \
      --kernel-cache "$work/kernels" > "$work/$name.log" || true
  [ "$(grep -c '^pass ' "$work/$name.log")" -eq "$count" ] ||
    { echo "FAIL: $dir ($name): not every case passed" >&2; cat "$work/$name.log" >&2; exit 1; }
}
# two reduction levels, the second reading a row value of the first
# (tests/chained), as planned and with the warp-specialized approach forced
# (grouped TMA steps at N = 2048)
every_case_passes chained-auto tests/chained 16 --approach auto
every_case_passes chained-ws tests/chained 16 --approach ws
# row constants of another dtype than the rows (tests/mixed_constants) and
# multi-wave backward rows of an odd length at 5 to 2049 rows
# (tests/odd_backward)
every_case_passes mixed tests/mixed_constants 14
every_case_passes odd-backward tests/odd_backward 38
# fv_maximum / fv_minimum on floats (max.NaN / min.NaN) agree with the
# compare-and-select form on every pair of special values
. tests/compile_sweep.sh  # build_device_check (the working directory is the source)
if build_device_check nan_maximum native "$work/nan_maximum"; then
  "$work/nan_maximum" || { echo "FAIL: fv_maximum / fv_minimum on NaN and zeros" >&2; exit 1; }
fi
# fv_exp_fast (16-bit outputs' exp) within its error model for every float
# argument in [-104, 88.72] (about 2.2e9 of them; under a second on an H200)
if build_device_check exp_fast_accuracy native "$work/exp_fast_accuracy"; then
  "$work/exp_fast_accuracy" || { echo "FAIL: fv_exp_fast outside its error model" >&2; exit 1; }
fi
echo "test_gpu_cases: ok"
