#!/bin/bash
B=/tmp/ab; gunzip -c .bin/attnbench-new.gz > $B; chmod +x $B
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/gpu.txt
V=$OUT/verify.log
for env in BIF_STREAMED=1 BIF_STREAMED=2 BIF_AFTER=1; do
  for cfg in "--beam 67 --ctx 3001 --gen 1" "--beam 130 --ctx 5000 --gen 5" "--beam 256 --ctx 16k" "--beam 64 --ctx 4097 --gen 33 --indirection" "--beam 72 --ctx 2000 --gen 17 --dtype bf16" "--kv-heads 8 --beam 40 --ctx 3000 --gen 9" "--kv-heads 1 --beam 4 --ctx 6000 --gen 7" "--kv-heads 4 --beam 33 --ctx 9000 --gen 130 --batch 2"; do
    echo "== $env $cfg" >> $V
    env $env timeout 60 $B run --kernel bifurcated $cfg --verify --iters 3 --warmup 1 >> $V 2>&1; echo "rc $?" >> $V
  done
done
grep -c "rc 0" $V; grep "rc [^0]" $V | head
S="--kernels bifurcated --beam 64:1024 --ctx 8k,16k,32k --gen 128"
timeout 120 $B sweep $S --kv-heads 32 --out $OUT/mha-base.csv > $OUT/sweeps.log 2>&1
BIF_STREAMED=1 timeout 120 $B sweep $S --kv-heads 32 --out $OUT/mha-streamed.csv >> $OUT/sweeps.log 2>&1
timeout 120 $B sweep $S --kv-heads 8,1 --out $OUT/gqa-base.csv >> $OUT/sweeps.log 2>&1
BIF_STREAMED=2 timeout 120 $B sweep $S --kv-heads 8,1 --out $OUT/gqa-streamed.csv >> $OUT/sweeps.log 2>&1
BIF_AFTER=1 timeout 120 $B sweep $S --kv-heads 8,1 --out $OUT/gqa-after.csv >> $OUT/sweeps.log 2>&1
tail -3 $OUT/sweeps.log
