#!/usr/bin/env bash
# test_compile_sm90a.sh: every generated kernel of the default sweep, and
# every warp-specialized kernel of its norm-backward cases, compiles for
# sm_90a with no spills (tests/compile_sweep.sh says what is checked).
#   test_compile_sm90a.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/compile_sweep.sh"
work="$(mktemp -d "${binary_dir}/test-compile-sm90a.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
compile_sweep "$tool" sm_90a "$work"
echo "test_compile_sm90a: ok"
