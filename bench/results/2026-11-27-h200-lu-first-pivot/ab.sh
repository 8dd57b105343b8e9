#!/usr/bin/env bash
# A/B: variants by env, interleaved rounds; wall time per call (median) and checksums.
out=$OUT/ab; mkdir -p $out
declare -A V
V[old]="JX_LIB=.gpu/liba"
V[lu0]="JX_VK_X=1"
run() { # variant m n workloads timing round
  local v=$1 m=$2 n=$3 w=$4 t=$5 r=$6
  env ${V[$v]} JX_VK_TIMING=$t JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan JX_PEER_MIN_TIME=0.3 \
    JX_PEER_M=$m JX_PEER_N=$n JX_PEER_WORKLOADS=$w timeout 120 bash .gpu/env.sh bash -c \
    'LD_LIBRARY_PATH=${JX_LIB:+$JX_LIB:}$LD_LIBRARY_PATH exec .gpu/bin/bench_peers --benchmark_format=json' > $out/$v-m$m-n$n-t$t-r$r.json 2> $out/$v-m$m-n$n-t$t-r$r.err
}
for r in 1 2 3; do
  for v in old lu0; do
    run $v 13 102400 par_filter,par_smoother 0 $r
    run $v 13 1600 par_grad,par_filter 0 $r
    run $v 16 102400 par_filter 0 $r
    run $v 8 102400 par_filter,par_smoother 0 $r
  done
done
for v in old lu0; do run $v 13 102400 par_filter 1 1; done
python3 - <<'PY' | tee $OUT/summary.txt
import json, glob, os, collections
out = os.environ['OUT'] + '/ab'
rows = collections.defaultdict(dict)
for f in sorted(glob.glob(out + '/*.json')):
    name = os.path.basename(f)[:-5]
    v, m, n, t, r = name.split('-')
    try: d = json.load(open(f))
    except Exception as e: print('bad', name, e); continue
    for b in d.get('benchmarks', []):
        key = (b['name'].split('/')[1], m, n, t)
        rows[key].setdefault(v, []).append((b.get('median_ms', b['real_time']), b.get('checksum')))
for f in sorted(glob.glob(out + '/*-t1-*.err')):
    print(os.path.basename(f), [l.strip() for l in open(f) if 'GPU' in l][-1:])
for key in sorted(rows):
    print(key, {v: [(round(x[0], 3), x[1]) for x in rows[key][v]] for v in rows[key]})
PY
tar czf $OUT/ab.tgz -C $OUT ab
rm -rf $out
