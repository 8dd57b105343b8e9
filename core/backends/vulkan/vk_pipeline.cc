#include "core/backends/vulkan/vk_pipeline.h"

#include "core/backends/cache_bound.h"

#include <fmt/format.h>
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>

#include "core/backends/vulkan/spirv_cache.h"
#include "core/base/hash.h"
#include "core/base/errors.h"
#include "core/instrument/debug.h"

#include <chrono>

namespace jx::vk {
namespace {

std::once_flag g_glslang_once;
std::mutex g_glslang_mu;  // glslang's front end is not reentrant across threads in this version

std::uint64_t hash_words(const std::vector<std::uint32_t>& w) {
  return fnv1a(std::string_view(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(std::uint32_t)));
}

// What else decides the SPIR-V of a text: the compiler's version and the options below.
const std::string& compile_key() {
  static const std::string k =
      fmt::format("glslang {}.{}.{}{} vulkan1.1 spv1.3 glsl450 spv+vulkan-rules optimized", GLSLANG_VERSION_MAJOR,
                  GLSLANG_VERSION_MINOR, GLSLANG_VERSION_PATCH, GLSLANG_VERSION_FLAVOR);
  return k;
}

std::vector<std::uint32_t> glslang_compile(const std::string& glsl, const std::string& name) {
  std::call_once(g_glslang_once, [] { glslang::InitializeProcess(); });
  spirv_cache_count_compile();
  std::lock_guard lock(g_glslang_mu);
  glslang::TShader sh(EShLangCompute);
  const char* src = glsl.c_str();
  sh.setStrings(&src, 1);
  sh.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  sh.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_1);
  sh.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_3);
  const auto msgs = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (!sh.parse(GetDefaultResources(), 450, false, msgs))
    throw BackendError(fmt::format("vulkan: GLSL for {} does not compile:\n{}\n{}", name, sh.getInfoLog(), glsl));
  glslang::TProgram prog;
  prog.addShader(&sh);
  if (!prog.link(msgs))
    throw BackendError(fmt::format("vulkan: GLSL for {} does not link:\n{}", name, prog.getInfoLog()));
  std::vector<std::uint32_t> spirv;
  glslang::SpvOptions opt;
  opt.disableOptimizer = false;
  glslang::GlslangToSpv(*prog.getIntermediate(EShLangCompute), spirv, &opt);
  return spirv;
}

// The driver's statistics of a pipeline's compiled code (VK_KHR_pipeline_executable_properties):
// "name value" for each, joined by ", ". NVIDIA's include the registers per invocation, which
// with the workgroup size bound how many workgroups a multiprocessor holds at once.
std::string pipeline_statistics(VkDevice d, VkPipeline pipe) {
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipe;
  std::uint32_t n = 0;
  if (vkGetPipelineExecutablePropertiesKHR(d, &pi, &n, nullptr) != VK_SUCCESS || n == 0) return "";
  VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
  ei.pipeline = pipe;
  ei.executableIndex = 0;  // a compute pipeline has one shader
  std::uint32_t m = 0;
  if (vkGetPipelineExecutableStatisticsKHR(d, &ei, &m, nullptr) != VK_SUCCESS) return "";
  std::vector<VkPipelineExecutableStatisticKHR> st(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
  if (vkGetPipelineExecutableStatisticsKHR(d, &ei, &m, st.data()) != VK_SUCCESS) return "";
  std::string out;
  for (const auto& x : st) {
    std::string v;
    switch (x.format) {
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: v = x.value.b32 ? "yes" : "no"; break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: v = fmt::format("{}", x.value.i64); break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: v = fmt::format("{}", x.value.u64); break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: v = fmt::format("{:g}", x.value.f64); break;
      default: continue;
    }
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", x.name, v);
  }
  return out;
}

}  // namespace

std::vector<std::uint32_t> compile_glsl(const std::string& glsl, const std::string& name) {
  if (auto cached = spirv_cache_load(compile_key(), glsl)) return *std::move(cached);
  auto spirv = glslang_compile(glsl, name);
  spirv_cache_store(compile_key(), glsl, spirv);
  return spirv;
}

Pipelines::Pipelines(std::shared_ptr<const Context> c) : c_(std::move(c)) {
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  VkPipelineCache pc = VK_NULL_HANDLE;
  check(vkCreatePipelineCache(c_->device(), &ci, nullptr, &pc), "vkCreatePipelineCache");
  cache_ = PipelineCacheH(c_->device(), pc);
}

std::shared_ptr<Pipeline> Pipelines::get(const std::vector<std::uint32_t>& spirv, int buffers, const std::string& name,
                                         std::uint32_t push_bytes) {
  const std::uint64_t h =
      hash_words(spirv) ^ static_cast<std::uint64_t>(buffers) ^ (static_cast<std::uint64_t>(push_bytes) << 32);
  std::lock_guard lock(mu_);
  if (auto it = by_hash_.find(h); it != by_hash_.end()) return it->second;
  VkDevice d = c_->device();
  auto p = std::make_shared<Pipeline>();
  p->keep = c_;
  p->buffers = buffers;
  p->name = name;
  std::vector<VkDescriptorSetLayoutBinding> b(static_cast<std::size_t>(buffers));
  for (int i = 0; i < buffers; ++i)
    b[i] = {static_cast<std::uint32_t>(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = static_cast<std::uint32_t>(b.size());
  li.pBindings = b.data();
  VkDescriptorSetLayout sl = VK_NULL_HANDLE;
  check(vkCreateDescriptorSetLayout(d, &li, nullptr, &sl), "vkCreateDescriptorSetLayout");
  p->set_layout = SetLayoutH(d, sl);
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &sl;
  VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  if (push_bytes) {
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pr;
  }
  VkPipelineLayout pl = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(d, &pli, nullptr, &pl), "vkCreatePipelineLayout");
  p->layout = PipelineLayoutH(d, pl);
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = spirv.size() * sizeof(std::uint32_t);
  mi.pCode = spirv.data();
  VkShaderModule sm = VK_NULL_HANDLE;
  check(vkCreateShaderModule(d, &mi, nullptr, &sm), "vkCreateShaderModule");
  p->module = ShaderH(d, sm);
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
              nullptr,
              0,
              VK_SHADER_STAGE_COMPUTE_BIT,
              sm,
              "main",
              nullptr};
  ci.layout = pl;
  if (c_->pipeline_stats()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipe = VK_NULL_HANDLE;
  const auto t0 = std::chrono::steady_clock::now();
  const VkResult r = vkCreateComputePipelines(d, cache_.get(), 1, &ci, nullptr, &pipe);
  // the driver's own compile, which the SPIR-V cache does not cover (lavapipe defers most of it to the
  // first dispatch, so its figure is a lower bound)
  if (debug_level() >= 1) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= 0.25)
      debug_log(1, fmt::format("vulkan: the driver took {:.2f} s to build pipeline '{}' ({} words of SPIR-V)", s, name,
                               spirv.size()));
  }
  if (r != VK_SUCCESS && r != VK_ERROR_DEVICE_LOST)
    throw PipelineCompileError(
        fmt::format("vulkan: the driver could not build pipeline '{}' ({})", name, result_name(r)));
  check(r, "vkCreateComputePipelines");
  p->pipeline = PipelineH(d, pipe);
  if (c_->pipeline_stats()) p->stats = pipeline_statistics(d, pipe);
  ++creations_;
  trim_unused(by_hash_);
  by_hash_[h] = p;
  return p;
}

std::size_t Pipelines::size() const {
  std::lock_guard lock(mu_);
  return by_hash_.size();
}

void Pipelines::release_all() {
  std::lock_guard lock(mu_);
  for (auto& [h, p] : by_hash_) {
    p->pipeline.reset();
    p->module.reset();
    p->layout.reset();
    p->set_layout.reset();
    p->keep.reset();
  }
  by_hash_.clear();
  cache_.reset();
}

void Pipelines::clear() {
  std::lock_guard lock(mu_);
  for (auto it = by_hash_.begin(); it != by_hash_.end();)
    it = it->second.use_count() == 1 ? by_hash_.erase(it) : std::next(it);
}

}  // namespace jx::vk
