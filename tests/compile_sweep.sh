# compile_sweep.sh: sourced by test_compile_sm90a.sh and test_compile_sm100a.sh
# (not a test itself; test_gpu_cases.sh sources it for build_device_check).  compile_sweep TOOL ARCH WORK checks, without a GPU:
#  1. every kernel of the default sweep (cases/) compiles through NVRTC for
#     ARCH with no spills (a spilling kernel makes its case fail in
#     --compile-only mode), and the archive holds one row per case;
#  2. with the warp-specialized approach forced, every case compiles with
#     no spills: norm-backward rows that bulk copies can move (multiples of
#     16 bytes) get warp-specialized inner-outer kernels and forward rows TMA
#     inner persistent ones where nvFuser's gate allows; the others (H = 1023,
#     1987, 4095 in half precision, short or long rows) multi-wave ones.  The
#     kernel cache is shared, so kernels of the first pass are not compiled
#     again;
#  3. every file the benchmark reads (bench/, 78 cases at N = 16384) is a
#     case definition, and each case compiles with no spills (a script left
#     under bench/ would be read as a broken case);
#  4. in the forced warp-specialized passes (cases/ and bench/), no
#     warp-specialized kernel is set aside for spilling unless its heuristic
#     judged it not good: the kernel that ran does not spill, but one that
#     was set aside ran the other approach quietly (four bf16 kernels did so
#     from 04ec007 to this check);
#  5. tests/chained/ (two reduction levels, the second a var_mean of a value
#     scaled by a row value of the first) compiles as planned and with the
#     warp-specialized approach forced, grouped TMA steps among them;
#  6. tests/mixed_constants/ (row constants of another dtype than the rows:
#     f32 weights with half rows and the reverse, forward and backward)
#     compiles, the 10 rows of an odd length on span chunks;
#  7. tests/odd_backward/ (multi-wave backward rows of an odd length at 5 to
#     2049 rows, 16-bit and fp32) compiles, on span chunks exactly where the
#     planner takes them (26 of 38 cases), and the two RMS rows of 22527
#     elements in one slot of spans.

fail() { echo "FAIL: $*" >&2; exit 1; }

# build_device_check NAME ARCH OUTPUT: builds tests/NAME.cu (a check of a
# device function of src/codegen/common.cuh on a GPU: nan_maximum,
# exp_fast_accuracy) with nvcc for ARCH into OUTPUT, from the source
# directory; fails the test if it does not build, and returns 1 (after
# saying so) where there is no nvcc.
build_device_check() {
  local nvcc_path
  nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  if [ ! -x "$nvcc_path" ]; then
    echo "no nvcc: tests/$1.cu not built"
    return 1
  fi
  "$nvcc_path" -O3 -arch="$2" -diag-suppress 550 -I src/codegen "tests/$1.cu" -o "$3" ||
    fail "tests/$1.cu does not build for $2"
}

# rows_of ARCHIVE: rows of /results.
rows_of() {
  h5dump -H -d /results "$1" | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' | grep -o '[0-9]*$'
}

# rows_with ARCHIVE SCHEDULERS: rows of /results whose kernels came from
# exactly these families (the plan that ran, after any fallback; /kernels
# also keeps kernels that were set aside for spilling).
rows_with() { h5dump -d /results "$1" | grep -c "^ *\"$2\",\$" || true; }

# check_compiled LOG STATUS MINIMUM PATTERN: the run succeeded, at least
# MINIMUM cases matching PATTERN compiled, none spills.
check_compiled() {
  local log="$1" status="$2" minimum="$3" pattern="$4"
  local compiled
  compiled=$(grep -c "^compiled .*$pattern" "$log" || true)
  echo "$(basename "$log" .log): $compiled cases compiled, exit status $status"
  if [ "$status" -ne 0 ]; then
    grep -v '^compiled ' "$log" | head -40 >&2
    fail "$(basename "$log" .log) failed"
  fi
  [ "$compiled" -ge "$minimum" ] || fail "$(basename "$log" .log): only $compiled cases compiled"
  grep -q ', 0 spill bytes' "$log" || fail "$(basename "$log" .log): no spill report"
  # (no pipe into grep -q or head here: under pipefail a writer cut off by a
  # reader that stops early fails the pipeline, at random)
  local spilling
  spilling=$(grep '^compiled ' "$log" | grep -v ', 0 spill bytes' || true)
  [ -z "$spilling" ] || fail "$(basename "$log" .log): a kernel spills: ${spilling%%$'\n'*}"
}

# check_set_aside ARCHIVE: no row's plan set a warp-specialized kernel aside
# for spilling unless it was forced against its heuristic (inner_outer_ws
# says so; inner_tma has no heuristic that could).
check_set_aside() {
  local archive="$1" name results set_aside unexpected
  name=$(basename "$archive" .h5)
  results=$(h5dump -d /results "$archive") || fail "$name: h5dump cannot read /results"
  set_aside=$(printf '%s\n' "$results" |
              grep -E -o '(inner_outer_ws|inner_tma) not used: its kernel spills [0-9]* bytes[^;)]*' || true)
  unexpected=$(printf '%s\n' "$set_aside" | grep -v -e 'judged it not good' -e '^$' || true)
  echo "$name: $(printf '%s\n' "$set_aside" | grep -c . || true) warp-specialized kernels" \
       "set aside for spilling, $(printf '%s\n' "$unexpected" | grep -c . || true) of them unexpectedly"
  if [ -n "$unexpected" ]; then
    printf '%s\n' "$unexpected" | head -5 >&2
    fail "$name: a warp-specialized kernel spills that was not forced against its heuristic"
  fi
}

# run_compile TOOL ARCH WORK NAME DIR [ARGS...]: compiles DIR's cases (with
# ARGS) into WORK/NAME.h5, its output in WORK/NAME.log; the run's exit
# status in $status.
run_compile() {
  local tool="$1" arch="$2" work="$3" name="$4" dir="$5"
  shift 5
  set +e
  "$tool" run "$dir" "$@" --compile-only --arch "$arch" -o "$work/$name.h5" \
      --kernel-cache "$work/kernels" > "$work/$name.log" 2>&1
  status=$?
  set -e
}

# check_rows WORK NAME: the archive holds one row per compiled case.
check_rows() {
  local compiled rows
  compiled=$(grep -c '^compiled ' "$1/$2.log")
  rows=$(rows_of "$1/$2.h5")
  [ "$rows" -eq "$compiled" ] || fail "$2: $rows archive rows for $compiled cases"
}

# compile_checked TOOL ARCH WORK NAME DIR MINIMUM [ARGS...]: compiles DIR's
# cases (with ARGS) into WORK/NAME.h5; at least MINIMUM compile, none
# spills, and the archive holds a row per compiled case.
compile_checked() {
  local tool="$1" arch="$2" work="$3" name="$4" dir="$5" minimum="$6"
  shift 6
  run_compile "$tool" "$arch" "$work" "$name" "$dir" "$@"
  check_compiled "$work/$name.log" "$status" "$minimum" ' '
  check_rows "$work" "$name"
}

compile_sweep() {
  local tool="$1" arch="$2" work="$3" status
  compile_checked "$tool" "$arch" "$work" "$arch" cases/ 600

  run_compile "$tool" "$arch" "$work" "$arch-ws" cases/ --approach ws
  check_compiled "$work/$arch-ws.log" "$status" 600 '@ws '
  local ws tma multiwave
  ws=$(rows_with "$work/$arch-ws.h5" inner_outer_ws)
  tma=$(rows_with "$work/$arch-ws.h5" inner_tma)
  multiwave=$(rows_with "$work/$arch-ws.h5" inner_outer_persistent)
  echo "$arch --approach ws: $ws cases ran warp-specialized inner-outer kernels," \
       "$tma TMA inner persistent ones, $multiwave multi-wave inner-outer ones"
  [ "$ws" -ge 100 ] || fail "$arch: only $ws cases took warp-specialized kernels"
  [ "$tma" -ge 100 ] || fail "$arch: only $tma cases took TMA inner persistent kernels"
  [ "$multiwave" -ge 1 ] || fail "$arch: rows of 1023 elements took bulk copies"
  check_set_aside "$work/$arch-ws.h5"

  compile_checked "$tool" "$arch" "$work" "$arch-bench" bench/ 78

  run_compile "$tool" "$arch" "$work" "$arch-bench-ws" bench/ --approach ws
  check_compiled "$work/$arch-bench-ws.log" "$status" 78 '@ws '
  check_set_aside "$work/$arch-bench-ws.h5"

  compile_checked "$tool" "$arch" "$work" "$arch-chained" tests/chained/ 16
  run_compile "$tool" "$arch" "$work" "$arch-chained-ws" tests/chained/ --approach ws
  check_compiled "$work/$arch-chained-ws.log" "$status" 16 '@ws '
  # the four rows of 1024 elements take TMA kernels; the two at N = 2048 in
  # grouped steps of 2 rows, whose passes each compute the row values
  [ "$(rows_with "$work/$arch-chained-ws.h5" inner_tma)" -ge 4 ] ||
    fail "$arch: tests/chained: fewer than 4 cases took TMA inner persistent kernels"
  local grouped
  grouped=$(h5dump -w 0 -d /results "$work/$arch-chained-ws.h5" | grep -c '2 rows per step' || true)
  [ "$grouped" -ge 2 ] ||
    fail "$arch: tests/chained: only $grouped cases took grouped steps of 2 rows (2 expected)"

  compile_checked "$tool" "$arch" "$work" "$arch-mixed" tests/mixed_constants/ 14
  check_rows_saying "$work/$arch-mixed.h5" "chunks of the row's aligned span" 10
  compile_checked "$tool" "$arch" "$work" "$arch-odd-backward" tests/odd_backward/ 38
  check_rows_saying "$work/$arch-odd-backward.h5" "the partials at the block's shift" 26
  check_rows_saying "$work/$arch-odd-backward.h5" \
    "1 row slot (copied as the aligned 16-byte chunks that hold it)" 2
}

# check_rows_saying ARCHIVE TEXT COUNT: exactly COUNT rows of /results
# describe their kernels with TEXT (on span chunks, for tests/mixed_constants
# and tests/odd_backward).
check_rows_saying() {
  local rows
  rows=$(h5dump -w 0 -d /results "$1" | grep -c "$2" || true)
  [ "$rows" -eq "$3" ] || fail "$(basename "$1" .h5): $rows rows say \"$2\" ($3 expected)"
}
