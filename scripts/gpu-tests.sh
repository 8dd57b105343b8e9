#!/usr/bin/env bash
# The GPU machine's half of scripts/gpu-check. Run there from the repository root, on the
# folder .gpu/ that scripts/gpu-check packed here:
#   bash .gpu/env.sh bash scripts/gpu-tests.sh
# It runs every test binary with JX_DEVICE=vulkan (4 at a time), `jxlab run --all --backend
# vulkan`, and the Vulkan binaries (and the DLM fixtures' associative scans) under
# VK_LAYER_KHRONOS_validation, then writes into $OUT (else gpu-out/):
#   h100-tests.txt      the record (scripts/gpu-record): commit, each binary's and the lab's counts
#                       with every failure's name and message, last line "N passed, M failed"
#   gpu-tests-logs.tgz  every log, gtest JSON and the lab's report folder
set -uo pipefail
root=$PWD
[ -d .gpu/bin ] || { echo "gpu-tests: no .gpu/bin here: run scripts/gpu-check on the build machine first" >&2; exit 2; }
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
w=$(mktemp -d)
mkdir -p "$w/json" "$w/log" "$w/rc" "$w/validation"
# the binaries read the source tree (scenarios, DLM fixtures) from here, not the build machine's path
export JX_SOURCE_DIR=$root JX_SCENARIOS=$root/scenarios JXLAB=$root/.gpu/bin/jxlab JX_NATIVE_CACHE=$w/native-cache JX_VULKAN_CACHE=$w/vulkan-cache
cp .gpu/commit "$w/commit" 2>/dev/null || echo unknown > "$w/commit"
.gpu/bin/jxlab devices > "$w/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$w/gpu.txt" 2>/dev/null || true

start=$(date +%s)
export w
run_one() {  # one binary, JX_DEVICE=vulkan
  local t=$1 n
  n=$(basename "$t")
  JX_DEVICE=vulkan timeout 1500 "$t" --gtest_output="json:$w/json/$n.json" > "$w/log/$n.log" 2>&1
  echo $? > "$w/rc/$n"
}
export -f run_one
ls .gpu/bin/test_* | xargs -P 4 -I{} bash -c 'run_one {}'

# the validation layer: the Vulkan binaries as CI's `validation` label runs them, and the DLM
# fixtures' associative scans on vulkan
if [ -d .gpu/layers ]; then
  for f in .gpu/layers/*.so.gz; do [ -f "$f" ] && gunzip -f "$f"; done  # gpu-check packs it compressed
  export VK_LAYER_PATH=$root/.gpu/layers LD_LIBRARY_PATH=$root/.gpu/layers:${LD_LIBRARY_PATH:-}
  # (test_vulkan with pipeline statistics: the extension's use checked by the layer, and
  # Vulkan.PipelineStatisticsWhereAskedAndAvailable on the driver's own)
  for n in test_vulkan test_vulkan_scan test_vulkan_shutdown test_vulkan_linalg; do
    stats=0
    [ "$n" = test_vulkan ] && stats=1
    JX_VK_PIPELINE_STATS=$stats JX_VULKAN_VALIDATION=1 timeout 1500 ".gpu/bin/$n" --gtest_output="json:$w/validation/$n.json" > "$w/validation/$n.log" 2>&1
    echo $? > "$w/validation/$n.rc"
  done
  JX_DEVICE=vulkan JX_VULKAN_VALIDATION=1 timeout 1500 .gpu/bin/test_dlm --gtest_filter='Nile/DlmFixture.*assoc*' \
    --gtest_output="json:$w/validation/test_dlm.json" > "$w/validation/test_dlm.log" 2>&1
  echo $? > "$w/validation/test_dlm.rc"
  unset VK_LAYER_PATH
else
  echo "no .gpu/layers: the validation layer was not packed" > "$w/validation/missing"
fi

.gpu/bin/jxlab run --all --backend vulkan --report "$w/lab" > "$w/lab.log" 2>&1
echo $? > "$w/lab.rc"
echo $(( $(date +%s) - start )) > "$w/seconds"

python3 scripts/gpu-record "$w" > "$out/h100-tests.txt"
tar czf "$out/gpu-tests-logs.tgz" -C "$w" json log rc validation lab lab.log devices.txt 2>/dev/null
tail -n 40 "$out/h100-tests.txt"
