# The paper's Figure 6: per-step latency against context length, one line per
# batch size W (samples of one context), with bifurcation (solid) and without (dashed);
# peers (flashinfer, xqa, ...) in dash patterns of their own, named in the legend.
# -e: plotdir, out, datafile (attnbench table --rows ctx --cols kernel,beam
#     --value ms_per_token --format csv), ncols, dashes and colors (one word per
#     data column), what (the shape, for the title)
load plotdir."/common.gp"
set title sprintf("Per-step attention latency vs context, %s (solid: bifurcated, dashed: fused, others: peers)", what)
set xlabel "context length m_c (tokens)"
set ylabel "latency per generated token, all layers (ms)"
set logscale xy 2
set format x "%.0f"
set format y "%g"
plot for [i=2:ncols] datafile using 1:i with linespoints \
     lt 0+word(colors, i-1) dt 0+word(dashes, i-1) pt 7 ps 0.8 lw 1.6 \
     title columnhead(i)
