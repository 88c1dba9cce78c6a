# Settings every figure shares. Callers pass `out` (the PNG path) with -e.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo enhanced size 1100,700 font ",11"
} else {
    set terminal png size 1100,700
}
set output out
set datafile separator ","
set datafile missing "-"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key outside right top box opaque
set border lw 1.2
# Twelve distinguishable colours: figures draw one line per W from 1 to 2048.
array palette[12] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", \
                     "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#a6761d"]
do for [i=1:12] { set linetype i lc rgb palette[i] lw 1.6 pt 7 }
set linetype cycle 12
# Dash patterns: 1 solid (bifurcated), 2 dashed (fused), 3 on one per peer kernel
# (render.sh's styles); the terminals have five, so 6 to 9 are defined here.
set dashtype 6 (24,6)
set dashtype 7 (2,6,12,6)
set dashtype 8 (16,4,2,4,2,4)
set dashtype 9 (8,3,8,3,2,3)
