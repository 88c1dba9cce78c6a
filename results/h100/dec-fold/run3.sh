#!/bin/bash
D=results/h100/dec-fold
mkdir -p /tmp/b $OUT/r; for v in base fold single; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
for pass in 1 2; do for v in base fold single; do
  timeout 100 /tmp/b/$v sweep --suite $D/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
A="--heads 32 --kv-heads 32 --beam 1024 --ctx 2000 --gen 130 --dtype bf16 --verify"
for i in 1 2 3 4 5 6 7 8; do for k in bifurcated auto; do timeout 30 /tmp/b/single run --kernel $k $A 2>&1 | tail -2 >> $OUT/r/repeat.log; done; done
timeout 120 compute-sanitizer --tool memcheck /tmp/b/single run --kernel auto $A > $OUT/r/memcheck-single.log 2>&1; echo "memcheck rc=$?" >> $OUT/r/rc.txt
timeout 120 compute-sanitizer --tool synccheck /tmp/b/single run --kernel auto $A > $OUT/r/synccheck-single.log 2>&1; echo "synccheck rc=$?" >> $OUT/r/rc.txt
grep -c " yes" $OUT/r/repeat.log; grep -v " yes\|^#" $OUT/r/repeat.log | head
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
