#!/usr/bin/env bash
# Tracing overhead on the thesis's ltest (docs/tracing.md):
#   tracer/bench/overhead.sh [RUNS]            (default 15 runs per variant)
# Runs ltest on 2 ranks RUNS times with the tracer and RUNS times with a
# shim that only measures the same run time (MPI_Finalize - MPI_Init return),
# alternating, and prints the medians of the run time per rank and of the
# whole mpirun wall time; then the per-call cost with bench/percall.c.
set -euo pipefail
runs=${1:-15}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT; echo "work: $work" >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mpicc -O2 -o "$work/ltest" "$root/../shared/data/thesis/ltest/ltest.c"
mpicc -O2 -shared -fPIC -o "$work/shim.so" "$here/runtime_shim.c"
mpicc -O2 -g -shared -fPIC -pthread -o "$work/tracer.so" "$root/tracer/c/liballprof.c"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mpirun_ltest() { # LIB OUTDIR
    mpirun -np 2 --oversubscribe --mca btl self,vader -x LD_PRELOAD="$1" -x PMPI_TRACE_DIR="$2" \
        "$work/ltest" >/dev/null 2>"$2/stderr"
}

for ((i = 0; i < runs; i++)); do
    for variant in shim tracer; do
        out="$work/$variant-$i"; mkdir -p "$out"
        t0=$(date +%s%N)
        mpirun_ltest "$work/$variant.so" "$out"
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000)) >>"$work/$variant.wall"
        for r in 0 1; do
            if [ $variant = shim ]; then
                sed -n "s/^runtime_us rank $r: //p" "$out/stderr" >>"$work/$variant.rank$r"
            else
                f="$out/pmpi-trace-rank-$r.txt"
                # MPI_Init:-:argc:argv:RETURN[:cpu=..], MPI_Finalize:TIME:-[:cpu=..]
                init=$(grep '^MPI_Init:' "$f" | cut -d: -f5)
                fin=$(grep '^MPI_Finalize:' "$f" | cut -d: -f2)
                echo $((fin - init)) >>"$work/$variant.rank$r"
            fi
        done
    done
done
printf '%-8s %18s %18s %20s\n' variant "rank0 run_us" "rank1 run_us" "mpirun wall_us"
for variant in shim tracer; do
    printf '%-8s %18s %18s %20s\n' $variant "$(median <"$work/$variant.rank0")" \
        "$(median <"$work/$variant.rank1")" "$(median <"$work/$variant.wall")"
done
echo "($runs runs each, medians)"

# Per-call cost: 200000 MPI_Comm_rank and 200000 zero-byte MPI_Sendrecv.
mpicc -O2 -o "$work/percall" "$here/percall.c"
for ((i = 0; i < 5; i++)); do
    for variant in shim tracer; do
        out="$work/percall-$variant-$i"; mkdir -p "$out"
        mpirun -np 2 --oversubscribe --mca btl self,vader -x LD_PRELOAD="$work/$variant.so" \
            -x PMPI_TRACE_DIR="$out" "$work/percall" 200000 2>/dev/null >>"$work/percall-$variant"
        rm -f "$out"/pmpi-trace-rank-*.txt
    done
done
printf '%-8s %18s %18s\n' variant "Comm_rank ns/call" "Sendrecv ns/call"
for variant in shim tracer; do
    printf '%-8s %18s %18s\n' $variant "$(awk '{print $2}' "$work/percall-$variant" | median)" \
        "$(awk '{print $4}' "$work/percall-$variant" | median)"
done
echo "(5 runs each, medians)"
