#!/bin/bash
# A kernel change's performance check on a GPU: a base tree (BASE_DIR, `git archive BASE_REV`
# unpacked there) against this tree, alternated base, new, base, new, on the ci suite and the
# fused/bifurcated/auto rows at W in {1,16,256} (contiguous) and {16,256,1024} (paged), ctx
# 8k/32k; compare round 1 base -> new and round 2 new -> base; VERIFY_FULL=1 adds
# verify --suite full on this tree. Writes under $OUT/ab (OUT defaults to build).
set -u
BASE_REV=${BASE_REV:?name the base revision}
BASE_DIR=${BASE_DIR:-.base}
OUT=${OUT:-build}
W=$OUT/ab; mkdir -p $W
exec > >(tee $W/ab.log) 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv
rev=${NEW_REV:-unknown}
echo "new revision $rev, base $BASE_REV"
( make -j8 VERSION=$rev >$W/build-new.log 2>&1; echo "new build rc=$?" ) & p1=$!
( make -C $BASE_DIR -j8 VERSION=$BASE_REV >$W/build-base.log 2>&1; echo "base build rc=$?" ) & p2=$!
wait $p1 $p2
NEW=build/attnbench; BASE=$BASE_DIR/build/attnbench
test -x $NEW && test -x $BASE || exit 1
GRID="--kernels fused,bifurcated,auto --beam 1,16,256 --ctx 8k,32k --kv-heads 32,8"
PAGED="--kernels fused,bifurcated,auto --beam 16,256,1024 --ctx 8k,32k --kv-heads 8 --cache paged --block-size 64"
for round in 1 2; do
  for side in base new; do
    bin=$BASE; [ $side = new ] && bin=$NEW
    s=$(date +%s)
    $bin sweep --suite ci --out $W/${side}${round}-ci.csv > $W/${side}${round}-ci.txt 2>&1
    $bin sweep $GRID --out $W/${side}${round}-grid.csv > $W/${side}${round}-grid.txt 2>&1
    $bin sweep $PAGED --out $W/${side}${round}-paged.csv > $W/${side}${round}-paged.txt 2>&1
    echo "$side round $round: $(( $(date +%s) - s )) s"
  done
done
for k in ci grid paged; do
  echo "== compare base1 -> new1 ($k)"; $NEW compare $W/base1-$k.csv $W/new1-$k.csv > $W/cmp-base-new-$k.txt 2>&1; echo "rc=$?"; tail -1 $W/cmp-base-new-$k.txt
  echo "== compare new2 -> base2 ($k)"; $NEW compare $W/new2-$k.csv $W/base2-$k.csv > $W/cmp-new-base-$k.txt 2>&1; echo "rc=$?"; tail -1 $W/cmp-new-base-$k.txt
done
if [ "${VERIFY_FULL:-0}" = 1 ]; then
  s=$(date +%s)
  $NEW verify --suite full > $W/verify-full.log 2>&1; echo "verify full rc=$? in $(( $(date +%s) - s )) s"; tail -2 $W/verify-full.log
fi
tar -C $OUT -czf $OUT/ab.tgz ab
