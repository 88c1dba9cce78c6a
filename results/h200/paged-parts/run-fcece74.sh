#!/bin/bash
# parts probe (context alone, decode alone, whole step) on contiguous and paged caches, interleaved;
# then the paged suite of #3 at HEAD
cd "$(dirname "$0")/.."
gunzip -c .bin/head.gz > /tmp/head; gunzip -c .bin/probe.gz > /tmp/probe; chmod +x /tmp/head /tmp/probe
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/smi.txt
/tmp/head peak > $OUT/peak.log 2>&1
for pass in 1 2; do
 for cfg in "1 512 8k" "8 512 8k" "8 1024 8k" "1 256 32k" "8 256 32k" "32 256 32k"; do
  set -- $cfg
  for cache in contiguous paged64 paged128; do
   case $cache in contiguous) copt="--cache contiguous";; paged64) copt="--cache paged -S 64";; paged128) copt="--cache paged -S 128";; esac
   for part in 0 1 2; do
     rm -f /tmp/r.csv
     PROBE_PART=$part /tmp/probe run --kernel bifurcated --kv-heads $1 --beam $2 --ctx $3 $copt --min-time 0.05 --out /tmp/r.csv > /dev/null 2>>$OUT/parts.err
     [ -f $OUT/parts.csv ] || sed -n 1p /tmp/r.csv | sed 's/^/probe,pass,/' > $OUT/parts.csv
     tail -1 /tmp/r.csv | sed "s/^/g$1w$2c$3_${cache}_part$part,$pass,/" >> $OUT/parts.csv
   done
  done
 done
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/smi.txt
/tmp/head sweep --suite paged --verify --out $OUT/paged.csv > $OUT/paged.log 2>&1
echo "paged rc=$?" >> $OUT/paged.log
