#!/usr/bin/env bash
# test_service_mpi.sh: `mpirun -n 3 fuservalidate run --compile-only` over the
# small sweeps gives one archive row per case, readable by h5dump, with the
# same case ids and statuses as a one-rank run; /devices has a row per rank;
# every rank logged its device; the work was spread over the ranks.
#   test_service_mpi.sh FUSERVALIDATE SOURCE_DIR BINARY_DIR
set -euo pipefail
tool="$1"; source_dir="$2"; binary_dir="$3"
. "$source_dir/tests/service_common.sh"
work="$(mktemp -d "${binary_dir}/test-service-mpi.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$source_dir"

set +e
"$tool" run --compile-only tests/cases -o "$work/one.h5" --kernel-cache "$work/kernels" \
    > "$work/one.log" 2>&1
one_status=$?
mpi_run 3 "$tool" run --compile-only tests/cases -o "$work/three.h5" \
    --kernel-cache "$work/kernels" > "$work/three.log" 2>&1
three_status=$?
set -e
[ "$one_status" -eq 0 ] || { cat "$work/one.log" >&2; fail "one rank: exit status $one_status"; }
[ "$three_status" -eq 0 ] ||
  { cat "$work/three.log" >&2; fail "three ranks: exit status $three_status"; }

cases=$(grep -c '^compiled ' "$work/one.log")
[ "$cases" -ge 20 ] || fail "only $cases cases compiled in the one-rank run"
h5dump "$work/three.h5" > /dev/null || fail "h5dump cannot read the 3-rank archive"
[ "$(row_count "$work/three.h5")" -eq "$cases" ] ||
  fail "3 ranks: $(row_count "$work/three.h5") rows for $cases cases"
rows "$work/one.h5" | sort > "$work/one.rows"
rows "$work/three.h5" | sort > "$work/three.rows"
[ "$(wc -l < "$work/three.rows")" -eq "$cases" ] || fail "rows could not be read back"
diff "$work/one.rows" "$work/three.rows" > /dev/null ||
  fail "1 and 3 ranks disagree: $(diff "$work/one.rows" "$work/three.rows" | head -5)"
[ -z "$(cut -d' ' -f1 "$work/three.rows" | uniq -d)" ] || fail "a case has two rows"

# Every rank started a worker, logged it, and has a /devices row.
for rank in 0 1 2; do
  grep -q "^rank $rank: .*worker pid [0-9]" "$work/three.log" ||
    fail "rank $rank did not log its device"
done
devices=$(h5dump -H -d /devices "$work/three.h5" | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' |
          grep -o '[0-9]*$')
[ "$devices" -eq 3 ] || fail "/devices has $devices rows, not 3"
[ "$(attribute "$work/three.h5" mpi_size)" -eq 3 ] || fail "mpi_size is not 3"
[ "$(attribute "$work/three.h5" exit_status)" -eq 0 ] || fail "exit_status is not 0"
grep -q '^progress: [0-9]*/[0-9]* done' "$work/three.log" || fail "no progress line"

# The other ranks ran cases too (column 41 of /results is the rank).
ranks=$(h5dump -d /results "$work/three.h5" | awk '
    /^   \([0-9]+\): \{/ { field = 0; inrow = 1; next }
    inrow { field++; if (field == 41) { gsub(/[ ,]/, ""); print; inrow = 0 } }' | sort -u | wc -l)
[ "$ranks" -ge 2 ] || fail "all cases ran on one rank"

# A rank bound to fewer cores than its share of the node (as Open MPI binds
# each of two ranks to one core) says how many threads its worker gets and
# names the way out.
bound="not checked (one core)"
if [ "$(nproc)" -ge 2 ]; then
  taskset -c 0 "$tool" run --compile-only tests/cases -o "$work/bound.h5" \
      --kernel-cache "$work/kernels" > "$work/bound.log" 2>&1 ||
    { cat "$work/bound.log" >&2; fail "a run bound to one core failed"; }
  grep -q "^rank 0: bound to 1 of the node's [0-9]* cores by the launcher: host references use 1 thread instead of [0-9]* (mpirun --bind-to none" \
      "$work/bound.log" || { cat "$work/bound.log" >&2; fail "no word on a rank bound to one core"; }
  if [ "$(nproc)" -eq "$(getconf _NPROCESSORS_ONLN)" ]; then
    grep -q "bound to" "$work/one.log" && fail "an unbound run warned about binding"
  fi
  bound="bound to one core: warned"
fi
clean_logs "$work"
echo "test_service_mpi: $cases cases on 3 ranks ($ranks ranks worked), same rows as 1 rank," \
     "$bound: ok"
