# Achieved bandwidth as a fraction of the measured peak read bandwidth, per kernel,
# against the bytes each kernel's algorithm must move.
# -e: plotdir, out, datafile (attnbench table --rows bytes --cols kernel
#     --value pct_peak_bw --format csv), ncols
load plotdir."/common.gp"
set title "Achieved bandwidth (bytes the kernel must move / median time) vs measured peak read bandwidth"
set xlabel "bytes the kernel must move per step (B)"
set ylabel "fraction of peak read bandwidth"
set logscale x 10
set format x "10^{%L}"
set yrange [0:*]
plot for [i=2:ncols] datafile using 1:(column(i)/100.0) with points pt (5+i) ps 1.1 \
     title columnhead(i), 1 with lines dt 3 lc rgb "#888888" title "peak"
