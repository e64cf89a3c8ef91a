#!/usr/bin/env bash
# test_compile_sm100a.sh: every generated kernel of the default sweep, and
# every warp-specialized kernel of its norm-backward cases, compiles for
# sm_100a with no spills (tests/compile_sweep.sh says what is checked).
#   test_compile_sm100a.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/compile_sweep.sh"
work="$(mktemp -d "${binary_dir}/test-compile-sm100a.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
compile_sweep "$tool" sm_100a "$work"
echo "test_compile_sm100a: ok"
