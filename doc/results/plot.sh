#!/bin/sh
# Plots for doc/results.md from a bench/h200.sh log: doc/results/plot.sh LOG
# Writes copy_paths_h2d.svg, copy_paths_d2h.svg (GB/s against chunk size, 128 chunks per
# submission, pinned memory) and tiny_tasks.svg (tasks/s per arrangement). Needs gnuplot.
set -eu
log=${1:?usage: doc/results/plot.sh BENCH_LOG}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
for dir in H2D D2H; do
    for m in engine sm loop auto; do
        grep "^copy_paths dir=$dir " "$log" | grep " count=128 mem=pinned method=$m " |
            sed -E 's/.*chunk=([0-9]+).* gbs=([0-9.]+) raw_loop_gbs=([0-9.]+) raw_batch_gbs=([0-9.]+).*/\1 \2 \3 \4/' |
            sort -n >"$tmp/$dir.$m"
    done
    lower=$(echo "$dir" | tr 'A-Z' 'a-z')
    gnuplot <<GP
set terminal svg size 720,440 dynamic font "sans,11" noenhanced
set output "$here/copy_paths_$lower.svg"
set title "$dir copies, 128 chunks per submission, pinned host memory (H200, 2026-11-29)"
set logscale x 2
set xlabel "chunk size (bytes)"
set ylabel "GB/s"
set key left top
set grid
set format x "%.0b%BB"
plot "$tmp/$dir.sm" using 1:2 with linespoints title "convoy sm", \
     "$tmp/$dir.engine" using 1:2 with linespoints title "convoy engine", \
     "$tmp/$dir.loop" using 1:2 with linespoints title "convoy loop", \
     "$tmp/$dir.auto" using 1:2 with points pt 6 ps 1.5 title "convoy auto", \
     "$tmp/$dir.engine" using 1:4 with lines dt 2 title "raw cudaMemcpyBatchAsync", \
     "$tmp/$dir.engine" using 1:3 with lines dt 3 title "raw cudaMemcpyAsync each"
GP
done
# tasks/s per arrangement (16384 tasks, 3 inputs and 1 output of 8 KiB)
{
    grep "^tiny_tasks sched=fifo .*flow_bytes=8192 .*batch_chore=off" "$log" | head -1 |
        sed -E 's/.*tasks_per_s=([0-9]+).*/"convoy fifo" \1/'
    grep "^tiny_tasks sched=batch .*flow_bytes=8192 .*batch_chore=off" "$log" | head -1 |
        sed -E 's/.*tasks_per_s=([0-9]+).*/"convoy batch,\\nchore per task" \1/'
    grep "^tiny_tasks sched=batch .*tasks=16384 flow_bytes=8192 .*batch_chore=on" "$log" | head -1 |
        sed -E 's/.*tasks_per_s=([0-9]+).*/"convoy batch,\\nbatch chore" \1/'
    grep "^raw_cuda arrangement=per_copy_per_task" "$log" | head -1 |
        sed -E 's/.*tasks_per_s=([0-9]+).*/"raw CUDA,\\ncopy per flow" \1/'
    grep "^raw_cuda arrangement=batched_ring_one_launch ring=256" "$log" | head -1 |
        sed -E 's/.*tasks_per_s=([0-9]+).*/"raw CUDA, batched\\nring of 256" \1/'
} >"$tmp/tiny"
gnuplot <<GP
set terminal svg size 720,440 dynamic font "sans,11" noenhanced
set output "$here/tiny_tasks.svg"
set title "tiny_tasks: 16384 tasks, 3 inputs + 1 output of 8 KiB (H200, 2026-11-29)"
set style data histograms
set style fill solid 0.8
set boxwidth 0.7
set ylabel "tasks/s"
set grid ytics
set yrange [0:*]
set bmargin 5
unset key
plot "$tmp/tiny" using 2:xtic(1) lc rgb "#4e79a7"
GP
rm -rf "$tmp"
