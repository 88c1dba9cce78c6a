#!/bin/sh
# A build against the revision before it, on one GPU:
#   results/h100/desc/run.sh NAME STEP...   (from the repository root; files go to $OUT)
# Steps: verify (verify-full for bifurcated and auto, by B), ab (ab.suite alternated
# twice, A first; ab-base-*.csv and ab-NAME-*.csv), and any bench/suites/SUITE name
# (swept with --verify by B). A: the revision before's binary, B: the new one's (both
# built on the CPU machine).
set -u
B=${B:-build/attnbench} A=${A:-build/base/attnbench} S=${S:-results/h100/desc/ab.suite} NAME=$1
shift
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv; $B peak; } > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
for step in "$@"; do
  case $step in
  verify)
    ( time $B verify --suite bench/suites/verify-full.suite --kernels bifurcated,auto ) > $OUT/verify-$NAME.log 2>&1
    tail -n 5 $OUT/verify-$NAME.log ;;
  ab)
    mkdir -p /tmp/ab
    for i in 1 2; do
      $A sweep --suite $S --out /tmp/ab/ab-base-$i.csv > /tmp/ab/ab-base-$i.log 2>&1
      $B sweep --suite $S --out /tmp/ab/ab-$NAME-$i.csv > /tmp/ab/ab-$NAME-$i.log 2>&1
    done
    tar czf $OUT/ab-$NAME.tgz -C /tmp ab
    for i in 1 2; do $B compare /tmp/ab/ab-base-$i.csv /tmp/ab/ab-$NAME-$i.csv --threshold 0.01; done
    ;;
  *)
    ( time $B sweep --suite bench/suites/$step.suite --verify --out $OUT/$step.csv ) > $OUT/$step.log 2>&1
    tail -n 5 $OUT/$step.log ;;
  esac
done
