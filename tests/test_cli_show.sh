#!/usr/bin/env bash
# test_cli_show.sh: the show command end to end, without a GPU: a case's
# inputs, IR, segments and CUDA as planned; with --arch, the plan a run
# would launch after compiling it (tests/relief/: a kernel that spills
# emitted again in a lighter form, or its family set aside), with each
# kernel's registers and spills; bad input named with exit status 2.
#   test_cli_show.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"
cd "$source_dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

softmax=softmax_fwd/fp32/2049x32766/s0
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
       "spilled 8 bytes under CUDA 13.0's NVRTC; another may not spill it)"
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
