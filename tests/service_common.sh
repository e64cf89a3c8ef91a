# service_common.sh: shared by the test_service_*.sh scripts (sourced, not a
# test itself): Open MPI settings, reading archive rows with h5dump, checks.
# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Progress as plain lines whatever the terminal, so logs are predictable.
export FV_PROGRESS=plain

fail() { echo "FAIL: $*" >&2; exit 1; }

# mpi_run N COMMAND...: N ranks on this machine.  Under AddressSanitizer the
# leak checker is off for MPI runs only: Open MPI itself leaks at exit.  The
# single-process runs of the same scripts keep it on.
mpi_run() {
  local ranks="$1"; shift
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    mpirun -n "$ranks" --oversubscribe "$@"
}

# rows FILE: one line "case_id status" per row of /results, in row order.
# case_id and status are the first and tenth columns (docs/archive-format.md);
# the columns before the tenth are one-line strings and numbers.
rows() {
  h5dump -d /results "$1" | awk '
    /^   \([0-9]+\): \{/ { field = 0; inrow = 1; next }
    inrow { field++; line = $0; gsub(/^ +|,$/, "", line); value[field] = line
            if (field == 10) { gsub(/"/, "", value[1]); print value[1], value[10]; inrow = 0 } }'
}

# row_count FILE: rows of /results from the dataspace.
row_count() {
  h5dump -H -d /results "$1" | grep -o 'DATASPACE  SIMPLE { ( [0-9]*' | grep -o '[0-9]*$'
}

# attribute FILE NAME: a scalar root attribute's value.
attribute() {
  h5dump -a "/$2" "$1" | awk '/\(0\):/ { sub(/.*\(0\): */, ""); gsub(/"/, ""); print; exit }'
}

# status_of FILE CASE_ID: the status number of a case's row(s).
status_of() { rows "$1" | awk -v id="$2" '$1 == id { print $2 }'; }

# Status numbers (src/service/result.h).
STATUS_ERROR=2; STATUS_CRASH=3; STATUS_TIMEOUT=4; STATUS_COMPILED=7

# clean_log FILE: no sanitizer report in FILE (the workers' stderr is in the
# logs too, so a leak or an error in a worker shows up there).
clean_log() {
  ! grep -q -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' -e 'runtime error:' "$1" ||
    fail "sanitizer report in $(basename "$1"): $(grep -m1 -e Sanitizer -e 'runtime error:' "$1")"
}

# clean_logs DIR: clean_log for every DIR/*.log.
clean_logs() {
  local log
  for log in "$1"/*.log; do
    [ -f "$log" ] && clean_log "$log"
  done
  return 0
}

# children PID [NAME]: the processes whose parent is PID (and whose command
# name is NAME), from /proc (no procps needed).
children() {
  local entry parent
  for entry in /proc/[0-9]*; do
    parent=$(sed 's/.*) //' "$entry/stat" 2> /dev/null | cut -d' ' -f2) || continue
    [ "$parent" = "$1" ] || continue
    [ -z "${2:-}" ] || [ "$(cat "$entry/comm" 2> /dev/null)" = "$2" ] || continue
    echo "${entry#/proc/}"
  done
}

# command_running PATTERN: a process whose command line matches PATTERN runs.
command_running() {
  local entry
  for entry in /proc/[0-9]*; do
    grep -q -e "$1" <<< "$(tr '\0' ' ' < "$entry/cmdline" 2> /dev/null)" && return 0
  done
  return 1
}
