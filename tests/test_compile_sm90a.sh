#!/usr/bin/env bash
# test_compile_sm90a.sh: every generated kernel of the default sweep, and
# every warp-specialized kernel of its norm-backward cases, compiles for
# sm_90a with no spills (tests/compile_sweep.sh says what is checked), as
# planned for the H100 (the default device of --compile-only on sm_90a);
# then the multi-wave kernels of the default sweep and the benchmark as
# planned for the H200, whose rules for fast memory per SM give some shapes
# other kernels (row pairs, clusters for two row slots); and a kernel that
# spills (tests/relief/) is emitted again with fewer registers live rather
# than set aside; tests/nan_maximum.cu and tests/exp_fast_accuracy.cu build
# with nvcc.  The kernel cache is shared, so only the kernels that differ are
# compiled again.
#   test_compile_sm90a.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/compile_sweep.sh"
work="$(mktemp -d "${binary_dir}/test-compile-sm90a.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
compile_sweep "$tool" sm_90a "$work"
compile_checked "$tool" sm_90a "$work" sm_90a-h200 cases/ 600 --device H200
compile_checked "$tool" sm_90a "$work" sm_90a-h200-bench bench/ 78 --device H200
# A kernel that spills is emitted again with fewer registers live, not set
# aside, where its family offers such a form: tests/relief/ holds one that
# is (softmax fwd bf16 2049 x 65534 on the H200) and one whose family
# declines (RMS fwd fp32 2049 x 32766 reads its weight in every pass), so
# it is set aside for the next family that takes its rows: inner_multipass.
compile_checked "$tool" sm_90a "$work" sm_90a-relief tests/relief/ 2 --device H200
[ "$(rows_with "$work/sm_90a-relief.h5" inner_persistent)" -eq 1 ] ||
  fail "sm_90a-relief: softmax did not run as one inner_persistent kernel"
[ "$(rows_with "$work/sm_90a-relief.h5" inner_multipass)" -eq 1 ] ||
  fail "sm_90a-relief: RMS norm did not take one inner_multipass kernel"
relief_rows=$(h5dump -d /results "$work/sm_90a-relief.h5")
# (here-strings, not `echo | grep -q`: under pipefail, grep -q stopping at a
# match early cut the echo off and failed the test at random, by the order the
# two rows were written in)
grep -q 'emitted again after spilling [0-9]* bytes: its row copy loop unrolled 4 at a time' \
    <<< "$relief_rows" ||
  fail "sm_90a-relief: the parameters do not say the kernel was emitted again" \
       "(wholly unrolled it spilled 368 bytes under CUDA 13.0's NVRTC; another may not spill it)"
grep -q 'inner_persistent not used: its kernel spills [0-9]* bytes' <<< "$relief_rows" ||
  fail "sm_90a-relief: the fallback does not say why RMS norm left its family" \
       "(wholly unrolled it spilled 44 bytes under CUDA 13.0's NVRTC; another may not spill it)"
# tests/nan_maximum.cu and tests/exp_fast_accuracy.cu (run by
# test_gpu_cases.sh on a GPU) build for sm_90a, so that the checks of the
# NaN-propagating maximum and of fv_exp_fast's error do not rot without one
build_device_check nan_maximum sm_90a "$work/nan_maximum" || true
build_device_check exp_fast_accuracy sm_90a "$work/exp_fast_accuracy" || true
echo "test_compile_sm90a: ok"
