#pragma once
// GLSL -> SPIR-V through the glslang C++ API, and compute pipelines cached by SPIR-V hash (plus
// a VkPipelineCache for the driver's own compilation).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/errors.h"
#include "core/backends/vulkan/vk_context.h"

namespace jx::vk {

// Throws BackendError naming the shader with glslang's log when the GLSL does not compile.
std::vector<std::uint32_t> compile_glsl(const std::string& glsl, const std::string& name);

// The driver refused to build a pipeline from valid SPIR-V (VK_ERROR_UNKNOWN on a shader its
// compiler cannot handle, out of memory): a planner catches it and takes its next path.
struct PipelineCompileError : BackendError {
  using BackendError::BackendError;
};

// Shared: a batch holds every pipeline its commands bind until it completes (a cache may drop
// one mid-recording, when the last program using it goes).
struct Pipeline : std::enable_shared_from_this<Pipeline> {
  std::shared_ptr<const Context> keep;  // first member: destroyed last, after the handles below
  SetLayoutH set_layout;
  PipelineLayoutH layout;
  ShaderH module;
  PipelineH pipeline;
  int buffers = 0;
  std::string name;
  // the driver's statistics of the compiled code, "name value, ..." (Context::pipeline_stats;
  // JX_VK_TIMING prints them beside the pipeline's time), or empty
  std::string stats;
};

class Pipelines {
 public:
  explicit Pipelines(std::shared_ptr<const Context> c);
  // The pipeline for this SPIR-V (created once); `buffers` storage buffers at bindings 0..n-1,
  // `push_bytes` of push constants.
  std::shared_ptr<Pipeline> get(const std::vector<std::uint32_t>& spirv, int buffers, const std::string& name,
                                std::uint32_t push_bytes = 0);
  std::size_t size() const;
  std::size_t creations() const { return creations_; }
  void clear();  // pipelines not held elsewhere
  // Shutdown: destroys every pipeline's Vulkan objects now, even those still referenced (their
  // later destruction is then a no-op), so the device can go while the driver is still intact.
  void release_all();

 private:
  std::shared_ptr<const Context> c_;
  PipelineCacheH cache_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<Pipeline>> by_hash_;
  std::size_t creations_ = 0;
};

}  // namespace jx::vk
