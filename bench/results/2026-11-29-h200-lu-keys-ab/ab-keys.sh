#!/usr/bin/env bash
# one-off: the LU's pivots by keys against the search (JX_VK_LU_KEYS=0)
export OUT=$OUT/keys AB_ROUNDS=3
export AB_VARIANTS='search=JX_VK_LU_KEYS=0;keys='
export AB_CELLS='13:102400:par_filter,par_smoother,par_grad 16:102400:par_filter,par_smoother 13:1600:par_grad,par_mle 8:102400:par_filter'
export AB_TIMING='13:102400:par_filter'
mkdir -p $OUT
(cd /tmp && cat > vkq.c <<'X'
#include <vulkan/vulkan.h>
#include <stdio.h>
int main(){VkApplicationInfo ai={VK_STRUCTURE_TYPE_APPLICATION_INFO};ai.apiVersion=VK_API_VERSION_1_2;
VkInstanceCreateInfo ci={VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};ci.pApplicationInfo=&ai;VkInstance in;
if(vkCreateInstance(&ci,0,&in))return 1;uint32_t n=8;VkPhysicalDevice p[8];vkEnumeratePhysicalDevices(in,&n,p);
for(uint32_t i=0;i<n;i++){VkPhysicalDeviceShaderAtomicInt64Features a={VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
VkPhysicalDeviceFeatures2 f={VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};f.pNext=&a;vkGetPhysicalDeviceFeatures2(p[i],&f);
VkPhysicalDeviceProperties pr;vkGetPhysicalDeviceProperties(p[i],&pr);
printf("%s int64=%d shared64atom=%d\n",pr.deviceName,f.features.shaderInt64,a.shaderSharedInt64Atomics);}
return 0;}
X
gcc vkq.c -o vkq -lvulkan 2>&1 | tail -2; ./vkq) > $OUT/features.txt 2>&1
bash bench/peers/ab.sh > $OUT/ab.log 2>&1
tail -30 $OUT/summary.txt
