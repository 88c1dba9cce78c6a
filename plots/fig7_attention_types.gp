# The paper's Figure 7: MHA vs GQA vs MQA, with and without bifurcation, against the
# number of samples W of one context; peers' lines in dash patterns of their own.
# -e: plotdir, out, datafile (attnbench table --rows beam --cols attn,kernel
#     --value ms_per_token --format csv), ncols, dashes, colors, what
load plotdir."/common.gp"
set title sprintf("MHA vs GQA vs MQA with and without bifurcation, %s", what)
set xlabel "samples W decoded from one context (B = 1)"
set ylabel "latency per generated token, all layers (ms)"
set logscale xy 2
set format x "%.0f"
set format y "%g"
plot for [i=2:ncols] datafile using 1:i with linespoints \
     lt 0+word(colors, i-1) dt 0+word(dashes, i-1) pt 7 ps 0.8 lw 1.6 \
     title columnhead(i)
