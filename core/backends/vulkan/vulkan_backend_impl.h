#pragma once
// The vulkan backend, composed of parts that each own their state (Kompute's Manager / Sequence /
// Algorithm split, every Vulkan object an RAII handle): the BufferPool (device buffers by size
// class, vk_buffers), the Recorder (batches, barriers, submission, GPU timing) with its
// DescriptorCache (vk_recorder, vk_timing), and the ScanRunner (scan plans and their dispatches,
// vk_scan_exec). This class owns the slots, the kernel executables, the limits profile and the
// counters, and is the KernelSource the scan runner plans with (vulkan_backend.cc).
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <unordered_map>

#include "core/backends/cache_bound.h"
#include "core/backends/host_memory.h"
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/vk_buffers.h"
#include "core/backends/vulkan/vk_context.h"
#include "core/backends/vulkan/vk_pipeline.h"
#include "core/backends/vulkan/vk_recorder.h"
#include "core/backends/vulkan/vk_scans.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/instrument/faults.h"
#include "core/instrument/instrument.h"

namespace jx::vk {

class VulkanBackend;
extern VulkanBackend* g_instance;  // the registered backend (atexit shutdown, vulkan:: API)

class VulkanBackend final : public Backend, public KernelSource {
 public:
  VulkanBackend();

  const DeviceInfo& info() const override;

  void apply_limits(const std::string& profile);
  std::string profile() const { return profile_; }
  bool checked_shared() const { return checked_shared_; }
  bool pipeline_stats() const { return ctx_->pipeline_stats(); }

  // ---- slots ----
  SlotId malloc(const AVal& tag) override;
  void incref(SlotId id) override;
  void decref(SlotId id) override;
  void write(SlotId id, std::span<const std::byte> src) override;
  void read(SlotId id, std::span<std::byte> dst) override;
  std::size_t slot_count() const override;
  std::size_t bytes() const override;
  std::vector<SlotInfo> live_slots() const override;
  BackendMemory memory() const override;
  void clear_caches() override;

  // ---- executables ----
  std::shared_ptr<Executable> prepare(const Op& op) override;
  std::shared_ptr<Executable> prepare_kernel(const Kernel& k) override;
  bool kernel_joins_group(const Kernel& k) const override { return joins_group(k); }
  std::shared_ptr<Executable> prepare_kernel_group(const std::vector<GroupMember>& members,
                                                   const std::vector<AVal>& inputs) override;
  ScanPlan plan_scan(const ScanProgram& sp, const Target& t) override;
  ScanPlan plan_associative_scan(const AssocProgram& ap, const Target& t) override;
  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override;
  void flush() override;
  // A pipeline for a shader (the profile's binding limit and llvmpipe's loop limit checked), its
  // split-reduction scratch zeroed once (KernelSource, for the scan runner too).
  std::shared_ptr<KernelExe> kernel_exe(const Shader& sh, const std::string& key,
                                        std::uint32_t push_bytes = 0) override;

  // ---- control ----
  void synchronize();
  vulkan::Counters counters() const;
  void reset_counters();
  void set_timing(bool on);
  std::vector<vulkan::TimedPipeline> timings() const;
  void reset_timings();

  // From the program (jx::shutdown(), after the compiled programs dropped their pipelines):
  // submits what is recorded, waits for the device, then destroys every Vulkan object, the
  // instance included. From the exit handler (at_exit): submits and destroys nothing (see
  // process_exiting()); recorded work is dropped. Either way handles still alive afterwards only
  // drop their references.
  void shutdown() override { shutdown(false); }
  void shutdown(bool at_exit);

 private:
  struct Slot {
    std::unique_ptr<Buf> buf;
    std::size_t bytes;
    AVal tag;
    std::int64_t refs;
    // Recorder::waits() + 1 when buf was taken from the recorder's released buffers: until the
    // next host wait, submitted work of its previous slot may still use it (no host access)
    std::uint64_t reused_until = 0;
    // Recorder::waits() + 1 while recorded work uses it: a host access waits first
    std::uint64_t used_until = 0;
  };
  // The kernel cache (lock held): the executable under key, rendered and compiled on a miss.
  template <class Render>
  std::shared_ptr<Executable> cached_kernel(const std::string& key, Render render) {
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    auto exe = kernel_exe(render(), key);
    trim_unused(kernels_);
    kernels_[key] = exe;
    return exe;
  }
  bool in_use_elsewhere(const Slot& s) const { return s.reused_until == rec_->waits() + 1; }
  bool pending(const Slot& s) const { return s.used_until == rec_->waits() + 1; }
  void mark_used(Slot& s) { s.used_until = rec_->waits() + 1; }  // by the work just recorded

  void alive() const;
  Slot& get(SlotId id);
  bool llvmpipe() const { return ctx_->desc().name.find("llvmpipe") != std::string::npos; }
  // What scan shaders may use under the current limits profile.
  ScanLimits scan_limits() const;
  void run_kernel(KernelExe& k, std::span<const SlotId> in, std::span<const SlotId> out);
  std::vector<VkBuffer> kernel_reads_, kernel_writes_;  // run_kernel's, reused
  std::vector<const Buf*> kernel_bound_;
  std::vector<Slot*> kernel_slots_;
  void host_routine(HostRoutineExe& r, std::span<const SlotId> in, std::span<const SlotId> out);

  mutable DeviceInfo info_;  // unavailable, with the reason, once the device is lost (health_)
  DeviceHealth health_;
  std::shared_ptr<Context> ctx_;  // pipelines still held elsewhere keep the device until they go
  std::unique_ptr<Pipelines> pipes_;
  std::unique_ptr<BufferPool> buffers_;
  std::unique_ptr<Recorder> rec_;
  std::unique_ptr<ScanRunner> scans_;
  mutable std::recursive_mutex mu_;
  std::string profile_ = "webgpu";
  int max_buffers_ = 8;
  // Scan shaders bounds-check workgroup memory (glsl_words.cc: shared_decl): on by default on
  // llvmpipe, which hides out-of-bounds accesses that real GPUs do not (JX_VK_CHECK_SHARED=0|1).
  bool checked_shared_ = false;
  std::unordered_map<SlotId, Slot> slots_;
  std::size_t bytes_ = 0, peak_ = 0;
  std::unordered_map<std::string, std::shared_ptr<KernelExe>> kernels_;
  std::unordered_map<std::string, std::vector<std::uint32_t>> spirv_;
  vulkan::Counters counters_;
  std::size_t creations_base_ = 0;
  std::uint64_t buffers_base_ = 0;
};

VulkanBackend* instance();  // the registered backend; BackendError with the reason when unavailable

}  // namespace jx::vk
