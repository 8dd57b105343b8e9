#pragma once
// The Vulkan instance, physical and logical device, compute queue, and RAII handles that own
// one Vulkan object each (destroyed with their parent device when they go out of scope).
#include <volk.h>  // Vulkan through function pointers: the loader is opened at run time

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jx::vk {

std::string result_name(VkResult r);
// Throws BackendError "vulkan: <what> failed: VK_ERROR_..." unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

// Set once the process's exit handlers run without jx::shutdown() having been called: from
// then on no Vulkan object is destroyed (the OS reclaims them). lavapipe's libLLVM registers some
// of its static objects (the JIT's GDB listener) on first compile, after our exit handler, so they
// are destroyed before it runs: destroying a pipeline or compiling a shader then touches freed memory.
bool process_exiting() noexcept;
void mark_process_exiting() noexcept;

template <class T, auto Destroy>
class Owned {
 public:
  Owned() = default;
  Owned(VkDevice d, T h) : dev_(d), h_(h) {}
  Owned(Owned&& o) noexcept : dev_(o.dev_), h_(std::exchange(o.h_, VK_NULL_HANDLE)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = o.dev_;
      h_ = std::exchange(o.h_, VK_NULL_HANDLE);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }
  void reset() {
    if (h_ != VK_NULL_HANDLE && !process_exiting()) Destroy(dev_, h_, nullptr);
    h_ = VK_NULL_HANDLE;
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != VK_NULL_HANDLE; }

 private:
  VkDevice dev_ = VK_NULL_HANDLE;
  T h_ = VK_NULL_HANDLE;
};

// volk holds the entry points in variables: each handle type destroys through a function.
#define JX_VK_OWNED(Name, T, fn)                                                          \
  inline void fn##_call(VkDevice d, T h, const VkAllocationCallbacks* a) { fn(d, h, a); } \
  using Name = Owned<T, fn##_call>;
JX_VK_OWNED(BufferH, VkBuffer, vkDestroyBuffer)
JX_VK_OWNED(MemoryH, VkDeviceMemory, vkFreeMemory)
JX_VK_OWNED(ShaderH, VkShaderModule, vkDestroyShaderModule)
JX_VK_OWNED(SetLayoutH, VkDescriptorSetLayout, vkDestroyDescriptorSetLayout)
JX_VK_OWNED(PipelineLayoutH, VkPipelineLayout, vkDestroyPipelineLayout)
JX_VK_OWNED(PipelineH, VkPipeline, vkDestroyPipeline)
JX_VK_OWNED(PipelineCacheH, VkPipelineCache, vkDestroyPipelineCache)
JX_VK_OWNED(DescriptorPoolH, VkDescriptorPool, vkDestroyDescriptorPool)
JX_VK_OWNED(CommandPoolH, VkCommandPool, vkDestroyCommandPool)
JX_VK_OWNED(FenceH, VkFence, vkDestroyFence)
JX_VK_OWNED(QueryPoolH, VkQueryPool, vkDestroyQueryPool)
#undef JX_VK_OWNED

struct DeviceDesc {
  std::string name, type, driver;
  std::uint32_t api = 0;
  bool float64 = false;
  std::uint32_t max_storage_buffers = 0, max_invocations = 0, max_shared_bytes = 0;
  float timestamp_ns = 0;  // nanoseconds per timestamp tick; 0 where the compute queue has none
};

// Validation messages (warnings and errors) seen since start, when validation is on.
std::size_t validation_message_count();
std::vector<std::string> validation_messages();

class Context {
 public:
  // Picks JX_VULKAN_DEVICE=<index> if set, else the first discrete GPU, else device 0.
  // Validation: VK_LAYER_KHRONOS_validation + a debug messenger collecting messages.
  // Throws BackendError with the reason when no usable device exists.
  explicit Context(bool validation);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return phys_; }
  VkQueue queue() const { return queue_; }
  std::uint32_t family() const { return family_; }
  const DeviceDesc& desc() const { return desc_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return mem_; }
  bool validation() const { return validation_; }
  std::uint32_t device_index() const { return index_; }
  // JX_VK_PIPELINE_STATS=1 and the driver has VK_KHR_pipeline_executable_properties: pipelines
  // capture the driver's statistics of their compiled code (registers, spills: vk_pipeline.cc)
  bool pipeline_stats() const { return pipeline_stats_; }

 private:
  void release() noexcept;
  void create_device();  // device_ and queue_ on phys_, family_ (the constructor's last step)
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t family_ = 0, index_ = 0;
  DeviceDesc desc_;
  VkPhysicalDeviceMemoryProperties mem_{};
  bool validation_ = false;
  bool pipeline_stats_ = false;
};

// Every physical device (for `jxlab devices`); empty with `why` set when there is no loader/ICD.
std::vector<DeviceDesc> enumerate_devices(std::string& why);

}  // namespace jx::vk
