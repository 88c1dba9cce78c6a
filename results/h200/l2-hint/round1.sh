#!/bin/bash
for b in new l2_128 l2_256; do gunzip -c .bin/attnbench-$b.gz > /tmp/$b; chmod +x /tmp/$b; done
for i in 1 2 3; do for b in new l2_128 l2_256; do
  for cfg in "--beam 1 --kv-heads 32 --ctx 8k" "--beam 1 --kv-heads 8 --ctx 32k" "--beam 2 --kv-heads 32 --ctx 8k" "--beam 8 --kv-heads 8 --ctx 32k" "--beam 4 --kv-heads 8 --ctx 32k --cache paged --block-size 16 --indirection"; do
    /tmp/$b run --kernel fused $cfg --out $OUT/ab-$b.csv > /dev/null 2>&1 || echo "fail $b $cfg"
  done
done; done
for b in l2_128 l2_256; do /tmp/$b verify --suite quick > $OUT/verify-quick-$b.log 2>&1; echo "$b verify rc $?"; done
