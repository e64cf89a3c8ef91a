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
# two reduction levels, the second reading a row value of the first
# (tests/chained), as planned and with the warp-specialized approach forced
# (grouped TMA steps at N = 2048): every case passes
for approach in auto ws; do
  "$tool" run tests/chained --approach "$approach" --require-gpu --repeats 3 \
      -o "$work/chained-$approach.h5" --refs "$work/refs" --kernel-cache "$work/kernels" \
      > "$work/chained-$approach.log" || true
  [ "$(grep -c '^pass ' "$work/chained-$approach.log")" -eq 16 ] ||
    { echo "FAIL: tests/chained ($approach): not every case passed" >&2
      cat "$work/chained-$approach.log" >&2; exit 1; }
done
# row constants of another dtype than the rows (tests/mixed_constants) and
# multi-wave backward rows of an odd length at 5 to 2049 rows
# (tests/odd_backward): every case passes
"$tool" run tests/mixed_constants --require-gpu --repeats 3 -o "$work/mixed.h5" --refs "$work/refs" \
    --kernel-cache "$work/kernels" > "$work/mixed.log" || true
[ "$(grep -c '^pass ' "$work/mixed.log")" -eq 14 ] ||
  { echo "FAIL: tests/mixed_constants: not every case passed" >&2; cat "$work/mixed.log" >&2; exit 1; }
"$tool" run tests/odd_backward --require-gpu --repeats 3 -o "$work/odd-backward.h5" \
    --refs "$work/refs" --kernel-cache "$work/kernels" > "$work/odd-backward.log" || true
[ "$(grep -c '^pass ' "$work/odd-backward.log")" -eq 24 ] ||
  { echo "FAIL: tests/odd_backward: not every case passed" >&2; cat "$work/odd-backward.log" >&2; exit 1; }
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
