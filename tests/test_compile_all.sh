#!/usr/bin/env bash
# test_compile_all.sh: every kernel of the default sweep (cases/) compiles
# through NVRTC for sm_90a and sm_100a, with no spills (a spilling kernel
# makes its case fail in --compile-only mode), and the archive holds one row
# per case.  Runs without a GPU.
#   test_compile_all.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
work="$(mktemp -d "${binary_dir}/test-compile-all.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

for arch in sm_90a sm_100a; do
  set +e
  "$tool" run cases/ --compile-only --arch "$arch" -o "$work/$arch.h5" \
      --kernel-cache "$work/kernels" > "$work/$arch.log" 2>&1
  status=$?
  set -e
  compiled=$(grep -c '^compiled ' "$work/$arch.log" || true)
  echo "$arch: $compiled cases compiled, exit status $status"
  if [ "$status" -ne 0 ]; then
    grep -v '^compiled ' "$work/$arch.log" | head -40 >&2
    fail "compiling for $arch failed"
  fi
  [ "$compiled" -ge 600 ] || fail "$arch: only $compiled cases compiled"
  grep -q ', 0 spill bytes' "$work/$arch.log" || fail "$arch: no spill report"
  if grep '^compiled ' "$work/$arch.log" | grep -v ', 0 spill bytes' | head -1 | grep -q .; then
    fail "$arch: a kernel spills"
  fi
  rows=$(h5dump -H -d /results "$work/$arch.h5" | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' | grep -o '[0-9]*$')
  [ "$rows" -eq "$compiled" ] || fail "$arch: $rows archive rows for $compiled cases"
done
echo "test_compile_all: ok"
