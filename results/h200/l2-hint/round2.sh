#!/bin/bash
for b in new l2_128; do gunzip -c .bin/attnbench-$b.gz > /tmp/$b; chmod +x /tmp/$b; done
/tmp/new peak > $OUT/peak.txt 2>&1
for i in 1 2 3 4 5 6; do for b in l2_128 new; do
  for cfg in "--beam 1 --kv-heads 32 --ctx 8k" "--beam 1 --kv-heads 8 --ctx 32k" "--beam 4 --kv-heads 8 --ctx 8k" "--beam 1 --kv-heads 32 --ctx 32k"; do
    /tmp/$b run --kernel fused $cfg --min-time 0.3 --out $OUT/ab-$b.csv > /dev/null 2>&1 || echo "fail $b $cfg"
  done
done; done
/tmp/l2_128 sweep --suite multiblock --out $OUT/multiblock-l2_128.csv > /dev/null 2>&1
/tmp/new sweep --suite multiblock --out $OUT/multiblock-new.csv > /dev/null 2>&1
