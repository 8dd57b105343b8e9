#!/usr/bin/env bash
mkdir -p $OUT/ab
run() {  # round variant tag env...
  local r=$1 v=$2 tag=$3; shift 3
  env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.3 JX_VK_SLOTS=$v "$@" \
    timeout 90 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/r$r-$v-$tag.txt 2>&1
  grep "^kalman" $OUT/ab/r$r-$v-$tag.txt | sed -E 's/ +/ /g' | awk -v r=$r -v v=$v '{m=""; d=""; c=""; for(i=1;i<=NF;i++){if($i~/^median_ms=/)m=$i; if($i~/^dispatches=/)d=$i; if($i~/^checksum=/)c=$i}; print "round " r " variant " v " " $1 " " m " " d " " c}' | tee -a $OUT/ab/summary.txt
}
for r in 1 2 3; do
  for v in odd rotate; do
    run $r $v m2 JX_PEER_N=102400 JX_PEER_M=2 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
    run $r $v b JX_PEER_N=1600 JX_PEER_B=64,1024 JX_PEER_WORKLOADS=par_grad
    run $r $v m4 JX_PEER_N=102400 JX_PEER_M=4 JX_PEER_WORKLOADS=par_filter
  done
done
for v in odd rotate; do
env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.2 JX_VK_TIMING=1 JX_VK_SLOTS=$v JX_PEER_N=102400 \
    JX_PEER_WORKLOADS=par_filter,par_grad timeout 90 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/prof-$v.txt 2>&1
done
cd $OUT && tar czf ab.tgz ab && rm -rf ab/r*
