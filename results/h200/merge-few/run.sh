#!/bin/bash
# The merge A/B: old = 79c4cfa (two-pass merge), new = 4555ae0 (rows of few slots in
# attn_merge_few_kernel), alternated twice on one H200 with --min-time 0.1.
for pass in 1 2; do for v in old new; do
  /tmp/ab_$v sweep --suite results/h200/merge-few/ab.suite --min-time 0.1 --out results/h200/merge-few/ab-$v-$pass.csv
done; done
# before: the kernels of one step of bifurcated (GQA, W = 512, 8k) under Nsight Compute
# (serialised, caches flushed between kernels):
ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv \
  /tmp/ab_old run --kernel bifurcated --heads 32 --head-dim 128 --dtype fp16 --batch 1 --gen 128 --kv-heads 8 --ctx 8k --beam 512 \
  --profile --iters 3 --warmup 2 > results/h200/merge-few/ncu-gqa-w512-8k-before.csv
