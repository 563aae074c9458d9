# The plots of ft-bench, from the data files it writes in its results
# directory; scripts/ft-bench runs
#   gnuplot -e "dir='RESULTS'; nodes=N; ec='K+M'" plot.gp
# Left: stall and protect time against the state size per trainer (log-log).
# Right: bytes sent per SMP for one snapshot against the node count.
if (!exists("dir")) dir = "bench-results"
if (!exists("nodes")) nodes = 4
if (!exists("ec")) ec = "3+1"

set terminal pngcairo size 1400,600 font "sans,10" noenhanced
set output dir."/ft-bench.png"
set datafile missing "NaN"
set key below box
set grid
set multiplot layout 1,2 title "ftrt ft-bench (".dir."/summary.txt has the machine and the command)"

set title "Snapshot stall and protect time"
set xlabel "state per trainer (MiB)"
set ylabel "time (ms, median)"
set logscale xy
c = sprintf("%dx1", nodes)
plot dir."/sizes.dat" u 1:2 w lp lw 2 pt 7 t "memcpy, warm (1x1)", \
     ""                u 1:3 w lp lw 2 pt 5 t "sync stall (1x1)", \
     ""                u 1:4 w lp lw 2 pt 9 t "lazy stall (1x1)", \
     ""                u 1:5 w lp lw 2 pt 11 t "write+fsync (1x1)", \
     ""                u 1:7 w lp lw 2 pt 4 dt 2 t "sync stall (".c.", shared cores)", \
     ""                u 1:8 w lp lw 2 pt 6 t "protect: snapshot to commit (".c.", k+m=".ec.")"

unset logscale
set key inside top right box opaque
set title "Bytes sent per SMP for one snapshot (k+m=".ec.", 2 MiB per trainer)"
set xlabel "nodes"
set ylabel "MiB sent per SMP"
set yrange [0:*]
set offsets 0, 0, graph 0.25, 0
set xrange [0:*]
set xtics 4
plot dir."/nodes.dat" u 1:($2/1048576) w lp lw 2 pt 7 t "max over SMPs", \
     ""               u 1:($3/1048576) w lp lw 2 pt 5 dt 2 t "mean over SMPs"
unset multiplot
