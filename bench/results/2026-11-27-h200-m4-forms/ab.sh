#!/usr/bin/env bash
mkdir -p $OUT/ab
run() {  # round variant tag env...
  local r=$1 v=$2 tag=$3; shift 3
  env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.3 "$@" \
    timeout 90 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/r$r-$v-$tag.txt 2>&1
  grep "^kalman" $OUT/ab/r$r-$v-$tag.txt | sed -E 's/ +/ /g' | awk -v r=$r -v v=$v '{m=""; d=""; c=""; for(i=1;i<=NF;i++){if($i~/^median_ms=/)m=$i; if($i~/^dispatches=/)d=$i; if($i~/^checksum=/)c=$i}; print "round " r " variant " v " " $1 " " m " " d " " c}' | tee -a $OUT/ab/summary.txt
}
for r in 1 2; do
  run $r base m4 JX_PEER_N=102400 JX_PEER_M=4 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
  run $r low2 m4 JX_VK_BLOCKED_LOW=2 JX_PEER_N=102400 JX_PEER_M=4 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
  run $r coop m4 JX_VK_ASSOC=coop JX_PEER_N=102400 JX_PEER_M=4 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
  run $r low2 m2 JX_VK_BLOCKED_LOW=2 JX_PEER_N=102400 JX_PEER_M=2 JX_PEER_WORKLOADS=par_filter,par_grad
  run $r base m2 JX_PEER_N=102400 JX_PEER_M=2 JX_PEER_WORKLOADS=par_filter,par_grad
done
env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.2 JX_VK_TIMING=1 JX_VK_BLOCKED_LOW=2 JX_PEER_N=102400 JX_PEER_M=4 \
    JX_PEER_WORKLOADS=par_filter,par_grad timeout 90 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/prof-m4-low2.txt 2>&1
cd $OUT && tar czf ab.tgz ab && rm -rf ab/r*
