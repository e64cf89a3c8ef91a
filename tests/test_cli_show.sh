#!/usr/bin/env bash
# test_cli_show.sh: the show command end to end, without a GPU: a case's
# inputs, IR, segments and CUDA as planned; with --arch, the plan a run
# would launch after compiling it (tests/relief/: a kernel that spills
# emitted again in a lighter form, or its family set aside; a kernel compiled
# to more registers than its planned blocks leave, bounded to them), with each
# kernel's registers and spills; long rows in clusters (tests/long_rows/);
# bad input named with exit status 2.
#   test_cli_show.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"
cd "$source_dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

softmax=softmax_fwd/bf16/2049x65534/s0
rms=rms_norm_fwd/fp32/2049x32766/s0

# As planned: every part, one persistent kernel, nothing compiled.
out="$("$tool" show "$softmax" tests/relief/ --device H200)" || fail "show failed: $out"
for part in "case $softmax" "--- IR (nvFuser frontend syntax) ---" "--- segments (on H200 (table)) ---" \
            "kernel fv_segment0_inner_persistent: inner persistent:" \
            "--- CUDA: fv_segment0_inner_persistent"; do
  grep -qF -- "$part" <<< "$out" || fail "show: missing '$part'"
done
grep -q "compiled for" <<< "$out" && fail "show without --arch compiled the kernels"

# Compiled for sm_90a: the same kernel emitted again, with 0 spill bytes.
out="$("$tool" show "$softmax" tests/relief/ --device H200 --arch sm_90a --segments)" ||
  fail "show --arch failed: $out"
grep -q "emitted again after spilling [0-9]* bytes: its row copy loop unrolled 4 at a time" <<< "$out" ||
  fail "show --arch: the kernel is not said to be emitted again (wholly unrolled it" \
       "spilled 368 bytes under CUDA 13.0's NVRTC; another may not spill it)"
grep -q "^  compiled for sm_90a: [0-9]* registers, 0 spill bytes" <<< "$out" ||
  fail "show --arch: no resources of the compiled kernel"
grep -q -- "--- CUDA" <<< "$out" && fail "show --segments printed the CUDA"

# RMS norm: planned as one persistent kernel, but compiled it spills and its
# family offers no lighter form, so one inner_multipass kernel.
out="$("$tool" show "$rms" tests/relief/ --device H200 --segments)" || fail "show rms failed"
grep -q "^kernel fv_segment0_inner_persistent" <<< "$out" || fail "show rms: not planned persistent"
out="$("$tool" show "$rms" tests/relief/ --device H200 --arch sm_90a --segments)" ||
  fail "show rms --arch failed: $out"
grep -q "set aside for these sizes: inner_persistent not used: its kernel spills [0-9]* bytes" <<< "$out" ||
  fail "show rms --arch: the fallback is not given (wholly unrolled the kernel spilled 44" \
       "bytes under CUDA 13.0's NVRTC; another may not spill it)"
grep -q "^kernel fv_segment0_inner_multipass" <<< "$out" ||
  fail "show rms --arch: not set aside for inner_multipass"
[ "$(grep -c '^  compiled for sm_90a: [0-9]* registers, 0 spill bytes' <<< "$out")" -eq 1 ] ||
  fail "show rms --arch: expected one compiled kernel without spills"

# Softmax bf16 16384 x 12288 holds its exp; NVRTC compiles it to more registers
# than the 3 blocks of 128 threads per SM planned leave (192 under CUDA 13.0), so
# on the H200 it is compiled again bounded to them, and keeps the bound without
# spilling; the H100 (slower memory per SM) keeps ptxas's count.
held=softmax_fwd/bf16/16384x12288/s0
out="$("$tool" show "$held" cases/ --device H200 --arch sm_90a --segments)" ||
  fail "show held failed: $out"
grep -q "^kernel fv_segment0_inner_persistent: bounded to the 3 blocks per SM planned" <<< "$out" ||
  fail "show held: not bounded to its planned blocks (unbounded it took 192 registers" \
       "under CUDA 13.0's NVRTC; another may fit 3 blocks)"
registers=$(sed -n 's/^  compiled for sm_90a: \([0-9]*\) registers, 0 spill bytes.*/\1/p' <<< "$out")
[ -n "$registers" ] && [ "$registers" -le 168 ] ||
  fail "show held: bounded, it takes '$registers' registers (at most 168 fit 3 blocks)"
out="$("$tool" show "$held" cases/ --device H100 --arch sm_90a --segments)" ||
  fail "show held on the H100 failed: $out"
grep -q "bounded to" <<< "$out" && fail "show held: bounded on the H100"

# Rows a row per SM would outgrow the L2 with (tests/long_rows): a cluster of 4
# blocks shares each row on an H200, not on a B200 (126 MiB of L2); softmax's
# online pass keeps a row per block.
long=rms_norm_fwd/fp32/9x131072/s0
out="$("$tool" show "$long" tests/long_rows/ --device H200 --arch sm_90a --segments)" ||
  fail "show long rows failed: $out"
grep -q "^kernel fv_segment0_inner_multipass: inner multipass: a row per cluster of 4 blocks" <<< "$out" ||
  fail "show long rows: not in clusters of 4"
grep -q "^  grid (36, 1, 1), block (1024, 1, 1), .*, clusters of 4 blocks" <<< "$out" ||
  fail "show long rows: no grid of 9 clusters"
grep -q "^  compiled for sm_90a: [0-9]* registers, 0 spill bytes" <<< "$out" ||
  fail "show long rows: spills or no resources"
# the same clustered kernel compiles for Blackwell (a B200 plans it so at longer rows)
out="$("$tool" show "$long" tests/long_rows/ --device H200 --arch sm_100a --segments)" ||
  fail "show long rows sm_100a failed: $out"
grep -q "^  compiled for sm_100a: [0-9]* registers, 0 spill bytes" <<< "$out" ||
  fail "show long rows sm_100a: spills or no resources"
out="$("$tool" show "$long" tests/long_rows/ --device B200 --segments)" || fail "show B200 failed"
grep -q "a row per block of 1024 threads" <<< "$out" || fail "show long rows: clusters on a B200"
out="$("$tool" show row_sum_and_normalize/fp32/9x131071/s0 tests/long_rows/ --device H200 --segments)" ||
  fail "show row_sum_and_normalize long rows failed"
grep -q "a row per cluster of 4 blocks .* on the aligned chunks of each row's span" <<< "$out" ||
  fail "show row_sum_and_normalize long rows: not spans in clusters of 4"
# ... each block walks the whole chunks of its slice, and the row's partial end
# chunks fall to the blocks whose slices hold them
out="$("$tool" show row_sum_and_normalize/fp32/9x131071/s0 tests/long_rows/ --device H200 --cuda)" ||
  fail "show row_sum_and_normalize --cuda failed"
grep -q "const long long walk_begin = slice_begin > whole_begin ? slice_begin : whole_begin;" <<< "$out" ||
  fail "show row_sum_and_normalize: the walk does not start at the slice's whole chunks"
[ "$(grep -c "if (!(column >= 0 && column + 4 <= inner) && vector_index >= slice_begin && vector_index < slice_end) {" <<< "$out")" -eq 3 ] ||
  fail "show row_sum_and_normalize: not 3 passes with end chunks taken in the slice holding them"
out="$("$tool" show softmax_fwd/bf16/9x128257/s0 tests/long_rows/ --device H200 --segments)" ||
  fail "show softmax long rows failed"
grep -q "a row per block of 1024 threads.*one online pass" <<< "$out" ||
  fail "show softmax long rows: not a row per block with the online pass"

# Bad input: an unknown case and a bad target, each named, exit status 2.
set +e
out="$("$tool" show no_such/fp32/1x1/s0 tests/relief/ 2>&1)"; status=$?
set -e
[ "$status" -eq 2 ] || fail "unknown case: exit status $status"
grep -q "no case 'no_such/fp32/1x1/s0'" <<< "$out" || fail "unknown case not named: $out"
set +e
out="$("$tool" show "$softmax" tests/relief/ --arch sm_9 2>&1)"; status=$?
set -e
[ "$status" -eq 2 ] || fail "bad --arch: exit status $status"
grep -qF "not 'sm_9'" <<< "$out" || fail "bad --arch not named: $out"
echo "test_cli_show: ok"
