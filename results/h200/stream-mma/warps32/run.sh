#!/bin/bash
# the register-streaming body at 32 warps per SM (r2: 16 CTAs of 2 warps, 4 keys a half-warp) against main
set -u
mkdir -p $OUT/csv
for b in main r2; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name --format=csv > $OUT/gpu.txt
log() { local s=$(date +%s); "$@" > $OUT/last.out 2>&1; local rc=$?; echo "rc=$rc $(( $(date +%s)-s ))s :: $*" >> $OUT/probe.log; tail -1 $OUT/last.out >> $OUT/probe.log; }
S="--suite probe/configs.suite --min-time 0.05"
for i in 1 2; do for v in main r2; do log /tmp/$v sweep $S --out $OUT/csv/$v-$i.csv; done; done
log /tmp/r2 run --kernel bifurcated --kv-heads 32 --beam 1024 --ctx 8k --verify
log /tmp/r2 run --kernel bifurcated --kv-heads 32 --beam 700 --batch 2 --ctx 2000 --gen 130 --indirection --verify
tar czf $OUT/csv.tgz -C $OUT csv && rm -rf $OUT/csv
