#!/usr/bin/env bash
# bench/service_report.sh: times whole-sweep service runs on a GPU machine
# (the service report): a run with an empty reference store and kernel cache
# ("cold"), the same run again ("warm"), and runs with one rank per GPU.
#
# usage: bench/service_report.sh PHASE RANKS GPUS LIMIT_S NAME [run options...]
#   PHASE   cold    empty the reference store and kernel cache, new archive
#           warm    keep both, new archive
#           resume  finish archive NAME (a run stopped at its limit)
#   RANKS   MPI ranks (mpirun -n RANKS --bind-to none)
#   GPUS    visible GPUs (CUDA_VISIBLE_DEVICES=0..GPUS-1); ranks take GPU
#           local rank % GPUS, so RANKS=2 GPUS=1 shares one GPU
#   LIMIT_S after this many seconds the ranks get SIGTERM, as Slurm sends it
#           at a time limit; the archive keeps what finished and `resume`
#           goes on from there
#   NAME    archive and log name
# Environment: FV_BIN (default build-gpu/fuservalidate), FV_REPORT_STATE
# (store, cache and archives; default ~/fv-report), FV_CASES (default cases/),
# OUT (logs and archive copies; default out/).
# Appends "NAME PHASE ranks gpus exit-status seconds rows" to OUT/times.txt.
set -u

if [ $# -lt 5 ]; then
  sed -n '2,21p' "$0" >&2
  exit 2
fi
phase=$1 ranks=$2 gpus=$3 limit=$4 name=$5
shift 5
bin=${FV_BIN:-build-gpu/fuservalidate}
state=${FV_REPORT_STATE:-$HOME/fv-report}
cases=${FV_CASES:-cases/}
out=${OUT:-out}
refs=$state/refs
cache=$state/kernels
archive=$state/$name.h5
mkdir -p "$state" "$out"

case "$phase" in
  cold) rm -rf "$refs" "$cache" "$archive"; target=(-o "$archive") ;;
  warm) rm -f "$archive"; target=(-o "$archive") ;;
  resume) target=(--resume "$archive") ;;
  *) echo "service_report: PHASE is cold, warm or resume, not '$phase'" >&2; exit 2 ;;
esac

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
visible=$(seq -s, 0 $((gpus - 1)))
started=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=$visible mpirun -n "$ranks" --bind-to none \
  "$bin" run "$cases" "${target[@]}" --refs "$refs" --kernel-cache "$cache" "$@" \
  >> "$out/$name.log" 2>&1 &
launcher=$!
# At the limit, signal the ranks (not mpirun, which would kill them at once).
# It sleeps a second at a time: a long sleep left behind when the run ends
# first would hold this script's output open for the rest of the limit.
( end=$((SECONDS + limit)); while [ "$SECONDS" -lt "$end" ]; do sleep 1; done
  pkill -TERM -f "^$bin run" ) &
watchdog=$!
wait "$launcher"
status=$?
kill "$watchdog" 2> /dev/null
wait "$watchdog" 2> /dev/null
finished=$(date +%s.%N)
# Rows in the archive: from its dataspace where h5dump is on PATH, else the
# last progress line of the log (cases done of all, this run and earlier ones).
if command -v h5dump > /dev/null; then
  rows=$(h5dump -H -d /results "$archive" 2> /dev/null |
         sed -n 's/.*DATASPACE *SIMPLE { ( \([0-9]*\) ).*/\1/p')
else
  rows=$(sed -n 's/^progress: \([0-9]*\/[0-9]*\) done.*/\1/p' "$out/$name.log" | tail -1)
fi
seconds=$(awk "BEGIN { printf \"%.1f\", $finished - $started }")
echo "$name $phase ranks=$ranks gpus=$gpus status=$status seconds=$seconds rows=${rows:-?}" |
  tee -a "$out/times.txt"
cp "$archive" "$out/" 2> /dev/null
exit 0
