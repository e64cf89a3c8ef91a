#!/usr/bin/env bash
# test_compile_sm90a.sh: every generated kernel of the default sweep, and
# every warp-specialized kernel of its norm-backward cases, compiles for
# sm_90a with no spills (tests/compile_sweep.sh says what is checked), as
# planned for the H100 (the default device of --compile-only on sm_90a);
# then the multi-wave kernels of the default sweep and the benchmark as
# planned for the H200, whose rules for fast memory per SM give some shapes
# other kernels (row pairs, clusters for two row slots).  The kernel cache is
# shared, so only the kernels that differ are compiled again.
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
echo "test_compile_sm90a: ok"
