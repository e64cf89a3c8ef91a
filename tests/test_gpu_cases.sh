#!/usr/bin/env bash
# test_gpu_cases.sh: on a machine with a GPU, every case of the small test
# sweeps (tests/cases: edge shapes included) runs and passes against the fp64
# references.  Without a GPU it prints SKIP and passes.  `ci/gpu-test` runs the
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
echo "test_gpu_cases: ok"
