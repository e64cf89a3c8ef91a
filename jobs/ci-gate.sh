#!/usr/bin/env bash
# jobs/ci-gate.sh: the merge gate.  Runs the suite (through srun, mpirun or
# plainly), then `fuservalidate compare BASELINE NEW --junit FILE`, and exits
# with the gate's status: 0 pass, 1 some case failed, newly failed or
# regressed, 2 the harness failed (the run, the comparison, a missing
# baseline).  docs/slurm.md describes it.
#
#   jobs/ci-gate.sh --baseline OLD.h5 [options] -- RUN-ARGUMENTS...
#   jobs/ci-gate.sh --no-baseline      [options] -- RUN-ARGUMENTS...
#   jobs/ci-gate.sh --baseline OLD.h5 --compare-only --output NEW.h5 [--junit FILE]
#
# RUN-ARGUMENTS go to `fuservalidate run` (case paths and options); the gate
# adds `-o NEW.h5`.
# Options (environment variable in brackets):
#   --baseline FILE       archive of the reference run (a nightly on main)
#   --no-baseline         gate on the run's own status only; no comparison, no JUnit
#   --output FILE         archive of this run [FV_OUTPUT] (default fuservalidate-gate.h5;
#                         it must not exist yet)
#   --junit FILE          JUnit report [FV_JUNIT] (default junit.xml)
#   --launcher KIND       srun, mpirun or none [FV_LAUNCHER] (default: srun inside a
#                         Slurm allocation, otherwise none)
#   --mpi PLUGIN          srun --mpi=PLUGIN [FV_MPI_PLUGIN] (default pmix)
#   --ranks N             mpirun -n N [FV_RANKS] (default 1; srun uses the allocation)
#   --threshold PERCENT, --alpha A   passed to compare
#   --compare-only        do not run: compare --output (made elsewhere) with the baseline
#   --bin PATH            the fuservalidate program [FV_BIN] (default: build/fuservalidate
#                         next to this script's checkout, else the one on PATH)
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2; exit 2; }
harness() { echo "ci-gate: $*" >&2; exit 2; }

script_dir="$(cd "$(dirname "$0")" && pwd)"
default_bin="$script_dir/../build/fuservalidate"
[ -x "$default_bin" ] || default_bin="$(command -v fuservalidate || echo fuservalidate)"
bin="${FV_BIN:-$default_bin}"
output="${FV_OUTPUT:-fuservalidate-gate.h5}"
junit="${FV_JUNIT:-junit.xml}"
launcher="${FV_LAUNCHER:-}"
mpi_plugin="${FV_MPI_PLUGIN:-pmix}"
ranks="${FV_RANKS:-1}"
baseline=""
no_baseline=0
compare_only=0
compare_options=()

while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baseline="${2:?--baseline needs a file}"; shift 2 ;;
    --no-baseline) no_baseline=1; shift ;;
    --output) output="${2:?--output needs a file}"; shift 2 ;;
    --junit) junit="${2:?--junit needs a file}"; shift 2 ;;
    --launcher) launcher="${2:?--launcher needs srun, mpirun or none}"; shift 2 ;;
    --mpi) mpi_plugin="${2:?--mpi needs a plugin}"; shift 2 ;;
    --ranks) ranks="${2:?--ranks needs a count}"; shift 2 ;;
    --threshold|--alpha) compare_options+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --compare-only) compare_only=1; shift ;;
    --bin) bin="${2:?--bin needs a path}"; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) harness "unknown option '$1' (RUN-ARGUMENTS come after --)" ;;
  esac
done

if [ -z "$baseline" ] && [ "$no_baseline" -eq 0 ]; then
  harness "give --baseline OLD.h5, or --no-baseline to gate on the run alone"
fi
if [ "$compare_only" -eq 1 ] && [ -z "$baseline" ]; then
  harness "--compare-only needs --baseline"
fi
if [ -z "$launcher" ]; then
  if [ -n "${SLURM_JOB_ID:-}" ]; then launcher=srun; else launcher=none; fi
fi
case "$launcher" in
  srun) launch=(srun "--mpi=$mpi_plugin" --kill-on-bad-exit=0) ;;
  mpirun) launch=(mpirun -n "$ranks" --bind-to none) ;;  # a rank's worker uses several cores
  none) launch=() ;;
  *) harness "--launcher is srun, mpirun or none, not '$launcher'" ;;
esac
[ -x "$bin" ] || command -v "$bin" >/dev/null ||
  harness "no fuservalidate program at '$bin' (--bin)"
# Shared file systems often refuse HDF5's file locks.
export HDF5_USE_FILE_LOCKING="${HDF5_USE_FILE_LOCKING:-FALSE}"

# An exit status as the gate sees it: 0 and 1 are themselves, anything else
# (2, a signal, a launcher failure) is a harness failure.
gate_of() { case "$1" in 0|1) echo "$1" ;; *) echo 2 ;; esac; }

run_gate=0
if [ "$compare_only" -eq 0 ]; then
  [ -e "$output" ] && harness "the archive $output exists already; choose another --output"
  echo "ci-gate: ${launch[*]:+${launch[*]} }$bin run -o $output $*"
  "${launch[@]}" "$bin" run -o "$output" "$@"
  run_status=$?
  run_gate="$(gate_of "$run_status")"
  echo "ci-gate: run exit status $run_status"
  if [ ! -f "$output" ]; then
    echo "ci-gate: the run wrote no archive at $output" >&2
    exit 2
  fi
fi

compare_gate=0
if [ -n "$baseline" ]; then
  echo "ci-gate: $bin compare $baseline $output --junit $junit ${compare_options[*]:-}"
  "$bin" compare "$baseline" "$output" --junit "$junit" "${compare_options[@]}"
  compare_status=$?
  compare_gate="$(gate_of "$compare_status")"
  echo "ci-gate: compare exit status $compare_status"
else
  echo "ci-gate: no baseline: no comparison and no JUnit report"
fi

gate=0
if [ "$run_gate" -eq 2 ] || [ "$compare_gate" -eq 2 ]; then
  gate=2
elif [ "$run_gate" -eq 1 ] || [ "$compare_gate" -eq 1 ]; then
  gate=1
fi
case "$gate" in
  0) echo "ci-gate: PASS" ;;
  1) echo "ci-gate: FAIL (failed, newly failing or regressed cases)" ;;
  2) echo "ci-gate: HARNESS FAILURE" ;;
esac
exit "$gate"
