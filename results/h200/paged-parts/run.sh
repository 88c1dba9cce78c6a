#!/bin/bash
cd "$(dirname "$0")/.."
for b in new probe; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
mkdir -p $OUT/r; R=$OUT/r
/tmp/new peak > $R/peak.log 2>&1
for pass in 1 2; do
 for cfg in "1 512 8k" "8 512 8k"; do
  set -- $cfg
  for cache in contiguous paged64 paged128 paged64ns paged128ns; do
   ns=""; case $cache in contiguous) copt="--cache contiguous";; paged64*) copt="--cache paged -S 64";; paged128*) copt="--cache paged -S 128";; esac
   case $cache in *ns) ns=1;; esac
   for part in 0 1; do
     rm -f /tmp/r.csv
     PROBE_NOSHUFFLE=$ns PROBE_PART=$part /tmp/probe run --kernel bifurcated --kv-heads $1 --beam $2 --ctx $3 $copt --min-time 0.05 --out /tmp/r.csv > /dev/null 2>>$R/parts.err
     [ -f $R/parts.csv ] || sed -n 1p /tmp/r.csv | sed 's/^/probe,pass,/' > $R/parts.csv
     tail -1 /tmp/r.csv | sed "s/^/g$1w$2c$3_${cache}_part$part,$pass,/" >> $R/parts.csv
   done
  done
 done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for cache in contiguous paged128 paged64; do
  case $cache in contiguous) copt="--cache contiguous";; paged64) copt="--cache paged -S 64";; paged128) copt="--cache paged -S 128";; esac
  PROBE_PART=1 $NCU --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --clock-control none -k regex:attn_wgmma_ctx --launch-skip 2 --launch-count 1 /tmp/probe run --kernel bifurcated --kv-heads 1 --beam 512 --ctx 8k $copt --iters 5 --warmup 1 > $R/ncu-$cache.txt 2>&1
done
/tmp/new sweep --suite bifurcated-paged --verify --out $R/bifurcated-paged.csv > $R/bifurcated-paged.log 2>&1; echo "rc=$?" >> $R/bifurcated-paged.log
cd $OUT && tar czf all.tgz r && rm -rf r
