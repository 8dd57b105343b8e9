#!/usr/bin/env bash
# A/B of kernel groups: JX_KERNEL_GROUPS=0 against the default, interleaved, 3 rounds
mkdir -p $OUT/ab
run() {  # round variant tag env...
  local r=$1 v=$2 tag=$3; shift 3
  env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.3 JX_KERNEL_GROUPS=$v "$@" \
    timeout 90 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/r$r-g$v-$tag.txt 2>&1
  grep "^kalman" $OUT/ab/r$r-g$v-$tag.txt | sed -E 's/ +/ /g' | awk -v r=$r -v v=$v '{m=""; d=""; for(i=1;i<=NF;i++){if($i~/^median_ms=/)m=$i; if($i~/^dispatches=/)d=$i}; print "round " r " groups " v " " $1 " " m " " d}' | tee -a $OUT/ab/summary.txt
}
for r in 1 2 3; do
  for v in 0 1; do
    run $r $v m2 JX_PEER_N=102400 JX_PEER_M=2 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
    run $r $v b64 JX_PEER_N=1600 JX_PEER_B=64 JX_PEER_WORKLOADS=par_filter,par_grad
    run $r $v b1024 JX_PEER_N=1600 JX_PEER_B=1024 JX_PEER_WORKLOADS=par_filter,par_grad
    run $r $v m4 JX_PEER_N=102400 JX_PEER_M=4 JX_PEER_WORKLOADS=par_filter,par_grad
    run $r $v m13 JX_PEER_N=1600 JX_PEER_M=13 JX_PEER_WORKLOADS=par_filter,par_smoother,par_grad
  done
done
# GPU time per pipeline with groups (round 2 style: after the warm-up)
env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.2 JX_VK_TIMING=1 JX_PEER_N=102400 \
  JX_PEER_WORKLOADS=par_filter,par_grad timeout 60 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/prof-g1.txt 2>&1
env JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.2 JX_VK_TIMING=1 JX_PEER_N=102400 \
  JX_KERNEL_GROUPS=0 JX_PEER_WORKLOADS=par_filter,par_grad timeout 60 bash .gpu/env.sh .gpu/bin/bench_peers > $OUT/ab/prof-g0.txt 2>&1
cd $OUT && tar czf ab.tgz ab && rm -rf ab/r*
