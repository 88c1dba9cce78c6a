# Multi-block (split-KV) gain of `fused`: median with --multi-block off divided by
# the median with on (solid) and auto (dashed), against the number of streams B*W.
# -e: plotdir, out, datafile (blocks "x on auto" per series, two blank lines
#     between), nseries, titles (one word per series)
load plotdir."/common.gp"
set title "Multi-block gain of fused: time(off) / time(on | auto); above 1 the split pays"
set xlabel "streams B*W"
set ylabel "speed-up over --multi-block off (x)"
set logscale x 2
set format x "%.0f"
set datafile separator whitespace
plot for [i=1:nseries] datafile index (i-1) using 1:2 with linespoints lc i pt 7 lw 1.6 \
         title "on, ".word(titles, i), \
     for [i=1:nseries] datafile index (i-1) using 1:3 with linespoints lc i dt 2 pt 6 lw 1.6 \
         title "auto, ".word(titles, i), \
     1 with lines dt 3 lc rgb "#888888" title "no gain"
