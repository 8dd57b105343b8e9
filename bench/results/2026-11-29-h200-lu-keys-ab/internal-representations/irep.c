// Asks the driver for a compute pipeline's internal representations (VK_KHR_pipeline_executable_properties)
#include <vulkan/vulkan.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k_spv.h"
int main(int argc, char** argv) {
  unsigned char* code = k_spv; size_t len = k_spv_len;
  if (argc > 1) { FILE* f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); len = ftell(f); rewind(f); code = malloc(len); fread(code, 1, len, f); fclose(f); }
  VkApplicationInfo ai = {VK_STRUCTURE_TYPE_APPLICATION_INFO}; ai.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO}; ci.pApplicationInfo = &ai;
  VkInstance in; if (vkCreateInstance(&ci, 0, &in)) return 1;
  uint32_t n = 1; VkPhysicalDevice p; vkEnumeratePhysicalDevices(in, &n, &p);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR ef = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2}; f2.pNext = &ef;
  vkGetPhysicalDeviceFeatures2(p, &f2);
  printf("pipelineExecutableInfo %d\n", ef.pipelineExecutableInfo);
  float prio = 1; VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}; qi.queueCount = 1; qi.pQueuePriorities = &prio;
  const char* ext = "VK_KHR_pipeline_executable_properties";
  VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO}; di.pNext = &ef; di.queueCreateInfoCount = 1; di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = 1; di.ppEnabledExtensionNames = &ext;
  VkDevice d; if (vkCreateDevice(p, &di, 0, &d)) { printf("no device\n"); return 1; }
  VkShaderModuleCreateInfo si = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO}; si.codeSize = len; si.pCode = (const uint32_t*)code;
  VkShaderModule sm; vkCreateShaderModule(d, &si, 0, &sm);
  VkDescriptorSetLayoutBinding bd[32]; uint32_t nb = argc > 2 ? atoi(argv[2]) : 1;
  for (uint32_t i = 0; i < nb; ++i) { VkDescriptorSetLayoutBinding x = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, 0}; bd[i] = x; }
  VkDescriptorSetLayoutCreateInfo li = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO}; li.bindingCount = nb; li.pBindings = bd;
  VkDescriptorSetLayout dl; vkCreateDescriptorSetLayout(d, &li, 0, &dl);
  VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};
  VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO}; pli.setLayoutCount = 1; pli.pSetLayouts = &dl; pli.pushConstantRangeCount = 1; pli.pPushConstantRanges = &pr;
  VkPipelineLayout pl; vkCreatePipelineLayout(d, &pli, 0, &pl);
  VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.flags = VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR | VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO; cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT; cpi.stage.module = sm; cpi.stage.pName = "main"; cpi.layout = pl;
  VkPipeline pipe; VkResult r = vkCreateComputePipelines(d, 0, 1, &cpi, 0, &pipe); printf("create %d\n", r); if (r) return 1;
  PFN_vkGetPipelineExecutableInternalRepresentationsKHR gir = (PFN_vkGetPipelineExecutableInternalRepresentationsKHR)vkGetDeviceProcAddr(d, "vkGetPipelineExecutableInternalRepresentationsKHR");
  VkPipelineExecutableInfoKHR pei = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR}; pei.pipeline = pipe; pei.executableIndex = 0;
  uint32_t cnt = 0; r = gir(d, &pei, &cnt, 0); printf("internal representations: %u (r=%d)\n", cnt, r);
  VkPipelineExecutableInternalRepresentationKHR reps[8]; memset(reps, 0, sizeof reps);
  for (uint32_t i = 0; i < cnt && i < 8; ++i) reps[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
  if (cnt > 8) cnt = 8; gir(d, &pei, &cnt, reps);
  for (uint32_t i = 0; i < cnt; ++i) { reps[i].pData = malloc(reps[i].dataSize + 1); }
  gir(d, &pei, &cnt, reps);
  for (uint32_t i = 0; i < cnt; ++i) {
    printf("== %s (%s) text=%d size=%zu\n", reps[i].name, reps[i].description, reps[i].isText, reps[i].dataSize);
    char fn[64]; snprintf(fn, sizeof fn, "rep%u.%s", i, reps[i].isText ? "txt" : "bin");
    FILE* o = fopen(fn, "wb"); fwrite(reps[i].pData, 1, reps[i].dataSize, o); fclose(o);
  }
  return 0;
}
