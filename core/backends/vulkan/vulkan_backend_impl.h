#pragma once
// The vulkan backend: device buffers from a size-class pool, kernels rendered to GLSL and
// compiled to pipelines, dispatches recorded into command buffers with barriers only where a
// dispatch reads or rewrites a buffer written since the last barrier, submitted in batches; the
// host waits only when it reads (or runs a routine without a shader on the host).
// Internal: the class is split by idea over vulkan_backend.cc (slots, memory, executables,
// the public vulkan:: API), vk_recorder.cc (command buffers, barriers, copies, submission) and
// vk_scan_exec.cc (fused, preencoded and Kogge-Stone scans).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/backends/cache_bound.h"
#include "core/backends/host_memory.h"
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/vk_context.h"
#include "core/backends/vulkan/vk_pipeline.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/instrument/faults.h"
#include "core/instrument/instrument.h"
#include "core/replay/policy.h"

namespace jx::vk {

constexpr std::uint32_t kSetsPerBatch = 512;
constexpr std::uint32_t kDescriptorsPerBatch = 8192;
constexpr std::uint32_t kCachedSets = 4096, kCachedDescriptors = 65536;  // cached_set's pool

// Adds the host time of a scope to a counter while timing is on (a no-op otherwise).
class HostTimer {
 public:
  HostTimer(bool on, std::uint64_t& ns)
      : ns_(on ? &ns : nullptr), t0_(on ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~HostTimer() {
    if (ns_)
      *ns_ += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }
  HostTimer(const HostTimer&) = delete;
  HostTimer& operator=(const HostTimer&) = delete;

 private:
  std::uint64_t* ns_;
  std::chrono::steady_clock::time_point t0_;
};

struct Buf {
  BufferH buf;
  MemoryH mem;
  std::size_t capacity = 0;
  void* mapped = nullptr;
  std::uint64_t id = 0;  // creation order, never reused (keys of cached descriptor sets)
};

struct KernelExe final : Executable {
  std::shared_ptr<Pipeline> pipe;  // holds the device: declared before scratch, destroyed after it
  std::int64_t invocations = 0;
  int buffers = 0;
  std::shared_ptr<Buf> scratch;  // Shader::scratch_bytes (bound last); batches using it hold it too
};

// A scan as one shader over packed operands (path fused).
struct ScanExe final : Executable {
  std::shared_ptr<Pipeline> pipe;
  ScanShader plan;
  std::vector<AVal> operands, results;
  std::int64_t length = 0;
  int bound_buffers(int) const override { return 2; }
};

// A scan whose every step's dispatches are recorded into the command buffer (path preencoded):
// buffers and descriptor sets are made once per run and reused by every step.
struct PreencodedExe final : Executable {
  ScanProgram sp;
  std::vector<std::shared_ptr<Executable>> steps;  // per body step (kernel or routine shader)
};

// A dispatch of the blocked or cooperative associative scan.
struct BlockedLevel {
  std::int32_t mode;  // 0 scan, 1 fix-up (2: a scan reading the inputs, set at dispatch)
  std::int64_t s;     // stride
  bool top;           // the top shader: several positions per invocation
};

struct AssocExe final : Executable {
  std::shared_ptr<Pipeline> pipe;     // Kogge-Stone rounds; null where the blocked form runs
  std::shared_ptr<Pipeline> blocked;  // null where a workgroup's elements do not fit its memory
  std::shared_ptr<Pipeline> top;      // the blocked form's top level, several positions per invocation
  std::shared_ptr<Pipeline> coop;     // the cooperative form (a workgroup per combine), where it runs
  std::vector<BlockedLevel> levels;   // the blocked or cooperative form's dispatches (blocked_levels)
  AssocShader plan;
  std::vector<AVal> operands;
  int num_consts = 0;
  std::int64_t length = 0;
  int bound_buffers(int) const override { return 3; }
};

struct HostRoutineExe final : Executable {
  Op op;
  std::shared_ptr<HostExecutable> host;
};

struct Batch {
  CommandPoolH pool;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  FenceH fence;
  DescriptorPoolH dpool;
  std::uint32_t sets = 0, descriptors = 0;
  int commands = 0;
  std::vector<std::unique_ptr<Buf>> released;          // back to the pool once the batch completed
  std::vector<std::unique_ptr<Buf>> staging;           // destroyed once the batch completed
  std::vector<std::shared_ptr<Buf>> held;              // executables' scratch buffers used by this batch
  std::vector<std::shared_ptr<const Pipeline>> pipes;  // every pipeline a command binds
  QueryPoolH timestamps;                               // created on first use while timing is on
  std::vector<std::string> timed;  // label of timestamp i (0: the start of the batch); empty: untimed
};

// A split reduction's scratch buffer is bound after the kernel's own buffers (appended to
// `bufs`), and the batch holds it until it completes.
inline void bind_scratch(Batch& b, const KernelExe& k, std::vector<VkBuffer>& bufs) {
  if (!k.scratch) return;
  bufs.push_back(k.scratch->buf.get());
  b.held.push_back(k.scratch);
}

inline std::size_t size_class(std::size_t n) {
  std::size_t c = 256;
  while (c < n) c <<= 1;
  return c;
}

class VulkanBackend;
extern VulkanBackend* g_instance;  // the registered backend (atexit shutdown, vulkan:: API)

class VulkanBackend final : public Backend {
 public:
  VulkanBackend();

  const DeviceInfo& info() const override { return info_; }

  void apply_limits(const std::string& profile);
  std::string profile() const { return profile_; }
  bool checked_shared() const { return checked_shared_; }

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

  ScanPlan plan_scan(const ScanProgram& sp, const Target& t) override;
  ScanPlan plan_associative_scan(const AssocProgram& ap, const Target& t) override;

  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override;
  void flush() override;

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
  };

  void alive() const;
  // VK_ERROR_DEVICE_LOST (real, or injected by the vk_device_lost fault) from `what`: the backend
  // becomes unavailable for the rest of the process (arrays on it can still be disposed); throws.
  [[noreturn]] void device_lost(const char* what);
  Slot& get(SlotId id);

  void choose_memory();

  std::unique_ptr<Buf> create_buffer(std::size_t bytes, std::uint32_t type, bool map_it = false);
  std::unique_ptr<Buf> create_staging(std::size_t bytes) { return create_buffer(bytes, staging_type_, true); }

  void give_back(std::unique_ptr<Buf> b);
  void trim_pool();

  bool llvmpipe() const { return ctx_->desc().name.find("llvmpipe") != std::string::npos; }

  std::shared_ptr<KernelExe> make_kernel_exe(const Shader& sh, const std::string& key, std::uint32_t push_bytes = 0);

  std::unique_ptr<Buf> acquire(std::size_t n);

  // A barrier before a command that reads `reads` and writes `writes` when it would see a write
  // not yet made visible (RAW, WAW) or overwrite what an earlier command may still read (WAR).
  void barrier_for(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes, Batch& b);
  void copy(Batch& b, VkBuffer src, std::size_t src_off, VkBuffer dst, std::size_t dst_off, std::size_t bytes);
  struct Region {
    VkBuffer src;
    std::size_t src_off;
    VkBuffer dst;
    std::size_t dst_off, bytes;
  };
  // copies into disjoint destination regions (packing operands, unpacking results): one barrier
  // check for all of them, none between them
  void copy_disjoint(Batch& b, const std::vector<Region>& rs);
  VkDescriptorSet bind_set(Batch& b, const Pipeline& pipe, const std::vector<VkBuffer>& bufs);
  void write_set(VkDescriptorSet set, const std::vector<VkBuffer>& bufs);
  // A descriptor set that outlives its batch, for the same pipeline layout over the same buffers
  // (a jit program's kernels over its pooled buffers, call after call): keyed by the buffers'
  // creation ids, so a destroyed buffer's sets are never hit again. Their pool is reset at the
  // first host wait after it fills (no recorded command refers to them then); meanwhile, and for
  // anything not cached, bind_set.
  VkDescriptorSet cached_set(Batch& b, const Pipeline& pipe, const std::vector<const Buf*>& bufs);
  DescriptorPoolH set_pool_;
  bool set_pool_full_ = false;
  std::unordered_map<std::string, VkDescriptorSet> sets_;
  std::uint64_t next_buf_id_ = 0;
  // invocations in workgroups of `workgroup` (the shader's local_size_x), `depth` times over
  // (gl_WorkGroupID.z: a series of a vmapped associative scan)
  void record_dispatch(Batch& b, const Pipeline& pipe, VkDescriptorSet set, std::int64_t invocations, int buffers,
                       std::int64_t workgroup = kWorkgroup, std::uint32_t depth = 1);
  Batch& batch_with_room(std::uint32_t sets, std::uint32_t descriptors);
  void touch(std::span<const SlotId> in, std::span<const SlotId> out);

  // Fused scan: operand slots copied into one packed buffer, the loop shader (one dispatch, or
  // one per chunk of steps where the driver limits loop iterations), results copied out.
  void run_scan(ScanExe& x, std::span<const SlotId> in, std::span<const SlotId> out);

  // Kogge-Stone: leaves packed into one buffer, rounds d = 1, 2, 4, ... ping-pong between two;
  // the blocked and cooperative forms: levels and fix-ups (vk_scan_exec.cc: blocked_levels).
  void run_assoc(AssocExe& x, std::span<const SlotId> in, std::span<const SlotId> out);
  // The cooperative form's levels and fix-ups, in place on the packed leaves.
  void record_coop(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer leaves);

  // Preencoded scan: the body's dispatches for every step recorded in order, x slices and ys
  // moved by buffer copies, carries in buffers of their own (staged when a carry output is
  // another carry). One descriptor set per body step serves every step.
  void run_preencoded(PreencodedExe& x, std::span<const SlotId> in, std::span<const SlotId> out);

  void host_routine(HostRoutineExe& r, std::span<const SlotId> in, std::span<const SlotId> out);

  // Caches a scan plan (or, with a null executable, the planner's refusal) under its key; the
  // cache keeps what live programs use plus a bounded number of unused plans.
  ScanLimits scan_limits() const;
  ScanPlan plan_preencoded(const ScanProgram& sp, const std::string& not_fused);
  const ScanPlan& remember_scan(const std::string& key, ScanPlan plan) {
    trim_unused(
        scans_, [](const ScanPlan& v) -> const auto& { return v.exe; });
    return scans_[key] = std::move(plan);
  }

  // ---- recording and submission ----
  Batch& recording();
  std::unique_ptr<Batch> make_batch();
  // RAW/WAW: a compute barrier before any command touching a buffer written since the last one.
  void barrier_if(const std::vector<VkBuffer>& bufs, Batch& b);
  void barrier(Batch& b);
  // Ends and submits the recording batch (no wait).
  void submit();
  // Submits what is recorded and waits for everything in flight; recycles the batches. A no-op
  // once the device is lost.
  void finish();
  void recycle(std::unique_ptr<Batch> b);
  // Timing (vk_timing.cc): a timestamp at the start of each batch and after every dispatch; a
  // dispatch's GPU time is the gap since the previous timestamp.
  void time_batch_start(Batch& b);
  void time_dispatch(Batch& b, const Pipeline& pipe, std::int64_t invocations);
  void time_collect(Batch& b);  // after the batch's fence: adds its gaps to timings_
  bool timing_ = false;
  // A recording batch is submitted (no wait) once it holds this many commands, so the device
  // starts on a long call's first commands while the host records the rest
  // (JX_VK_SUBMIT_EVERY; 0: only when a batch is full or at a host wait).
  std::uint32_t submit_every_ = 64;
  // Scan shaders bounds-check workgroup memory (glsl_words.cc: shared_decl): on by default on
  // llvmpipe, which hides out-of-bounds accesses that real GPUs do not (JX_VK_CHECK_SHARED=0|1).
  bool checked_shared_ = false;
  std::map<std::string, vulkan::TimedPipeline> timings_;

  DeviceInfo info_;
  std::shared_ptr<Context> ctx_;  // pipelines still held elsewhere keep the device until they go
  std::unique_ptr<Pipelines> pipes_;
  mutable std::recursive_mutex mu_;
  std::string profile_ = "webgpu";
  int max_buffers_ = 8;
  bool host_visible_ = true;
  bool lost_ = false;
  std::uint32_t mem_type_ = 0, staging_type_ = 0;
  // Reads: host-cached memory when the device has it. Buffers in device-local, host-visible
  // memory (ReBAR) are write-combined: the CPU reads them uncached over PCIe (~30 MB/s measured
  // on the H100), so reads from them go through a copy into cached staging memory instead.
  std::uint32_t readback_type_ = 0;
  bool mapped_reads_cached_ = true;
  std::unique_ptr<Buf> readback_;  // reused staging buffer for reads (grows to the largest read)
  std::unordered_map<SlotId, Slot> slots_;
  // size class -> pooled buffers by id; no empty lists. acquire takes the oldest (smallest id), so
  // a call that starts from the same pooled set gets the same buffers in the same order whatever
  // order the last call released them in, and its cached descriptor sets (keyed by ids) match.
  std::map<std::size_t, std::map<std::uint64_t, std::unique_ptr<Buf>>> free_;
  std::size_t bytes_ = 0, peak_ = 0, pooled_bytes_ = 0, pool_budget_ = std::size_t{256} << 20;
  std::unordered_map<std::string, std::shared_ptr<KernelExe>> kernels_;
  std::unordered_map<std::string, ScanPlan> scans_;  // the planner's answers, refusals included
  std::unordered_map<std::string, std::vector<std::uint32_t>> spirv_;
  std::unique_ptr<Batch> current_;
  std::deque<std::unique_ptr<Batch>> inflight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  std::unordered_set<VkBuffer> written_;
  std::unordered_set<VkBuffer> read_;  // read since the last barrier (scans rewrite buffers they read)
  std::unordered_set<SlotId> used_;    // slots touched by work not yet known complete
  vulkan::Counters counters_;
  std::size_t creations_base_ = 0;
};

VulkanBackend* instance();  // the registered backend; BackendError with the reason when unavailable

}  // namespace jx::vk
