#!/usr/bin/env bash
export OUT=$OUT/fix AB_ROUNDS=3
export AB_VARIANTS='all=;g8448=JX_VK_COOP_FIX_GROUPS=8448;g2112=JX_VK_COOP_FIX_GROUPS=2112;g1056=JX_VK_COOP_FIX_GROUPS=1056'
export AB_CELLS='13:102400:par_filter,par_smoother 16:102400:par_filter 13:1600:par_grad'
export AB_TIMING='13:102400:par_filter'
mkdir -p $OUT
bash bench/peers/ab.sh > $OUT/ab.log 2>&1
tail -22 $OUT/summary.txt
