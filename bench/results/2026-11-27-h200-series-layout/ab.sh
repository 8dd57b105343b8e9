#!/usr/bin/env bash
# A/B of the per-series associative scan's layout: a = batch after the scan axis (.gpu/liba),
# b = batch before it (.gpu/lib); interleaved, 3 rounds
mkdir -p $OUT/ab
run() {  # round variant tag env...
  local r=$1 v=$2 tag=$3; shift 3
  local pre=""; [ $v = a ] && pre="$PWD/.gpu/liba:"
  env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.3 "$@" \
    timeout 90 bash .gpu/env.sh bash -c "LD_LIBRARY_PATH=$pre\$LD_LIBRARY_PATH exec .gpu/bin/bench_peers" > $OUT/ab/r$r-$v-$tag.txt 2>&1
  grep "^kalman" $OUT/ab/r$r-$v-$tag.txt | sed -E 's/ +/ /g' | awk -v r=$r -v v=$v '{m=""; d=""; c=""; for(i=1;i<=NF;i++){if($i~/^median_ms=/)m=$i; if($i~/^dispatches=/)d=$i; if($i~/^checksum=/)c=$i}; print "round " r " variant " v " " $1 " " m " " d " " c}' | tee -a $OUT/ab/summary.txt
}
for r in 1 2 3; do
  for v in a b; do
    run $r $v b1024 JX_PEER_N=1600 JX_PEER_B=1024 JX_PEER_WORKLOADS=par_filter,par_grad
    run $r $v b64 JX_PEER_N=1600 JX_PEER_B=64 JX_PEER_WORKLOADS=par_filter,par_grad
  done
done
for v in a b; do
  pre=""; [ $v = a ] && pre="$PWD/.gpu/liba:"
  env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.2 JX_VK_TIMING=1 JX_PEER_N=1600 JX_PEER_B=1024 \
    JX_PEER_WORKLOADS=par_filter,par_grad timeout 60 bash .gpu/env.sh bash -c "LD_LIBRARY_PATH=$pre\$LD_LIBRARY_PATH exec .gpu/bin/bench_peers" > $OUT/ab/prof-$v.txt 2>&1
done
cd $OUT && tar czf ab.tgz ab && rm -rf ab/r*
