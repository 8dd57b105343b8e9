// The vulkan backend: device buffers from a size-class pool, kernels rendered to GLSL and
// compiled to pipelines, dispatches recorded into command buffers with barriers only where a
// dispatch reads or rewrites a buffer written since the last barrier, submitted in batches; the
// host waits only when it reads (or runs a routine without a shader on the host).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/backends/host_memory.h"
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/vk_context.h"
#include "core/backends/vulkan/vk_pipeline.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/instrument/instrument.h"
#include "core/replay/policy.h"

namespace jx {
namespace {

using namespace vk;

constexpr std::uint32_t kSetsPerBatch = 512;
constexpr std::uint32_t kDescriptorsPerBatch = 8192;

struct Buf {
  BufferH buf;
  MemoryH mem;
  std::size_t capacity = 0;
  void* mapped = nullptr;
};

struct KernelExe final : Executable {
  std::shared_ptr<Pipeline> pipe;
  std::int64_t invocations = 0;
  int buffers = 0;
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
  bool preencoded() const override { return true; }
};

// An associative scan as Kogge-Stone rounds of one shader.
struct AssocExe final : Executable {
  std::shared_ptr<Pipeline> pipe;
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
  std::vector<std::unique_ptr<Buf>> released;  // back to the pool once the batch completed
  std::vector<std::unique_ptr<Buf>> staging;   // destroyed once the batch completed
};

std::size_t size_class(std::size_t n) {
  std::size_t c = 256;
  while (c < n) c <<= 1;
  return c;
}

class VulkanBackend;
VulkanBackend* g_instance = nullptr;

class VulkanBackend final : public Backend {
 public:
  VulkanBackend() {
    info_.backend = "vulkan";
    info_.device = "Vulkan compute";
    const char* val = std::getenv("JX_VULKAN_VALIDATION");
    const bool validation = val && *val && std::string(val) != "0";
    try {
      ctx_ = std::make_shared<Context>(validation);
      pipes_ = std::make_unique<Pipelines>(ctx_);
      const auto& d = ctx_->desc();
      info_.device = fmt::format("{} ({}, {}){}", d.name, d.type, d.driver, validation ? " [validation]" : "");
      info_.available = true;
      choose_memory();
      const char* lim = std::getenv("JX_LIMITS");
      apply_limits(lim && *lim ? lim : "webgpu");
      g_instance = this;
      std::atexit([] {
        if (g_instance) g_instance->shutdown();
      });
    } catch (const Error& e) {
      pipes_.reset();
      ctx_.reset();
      info_.available = false;
      info_.reason = e.what();
    }
  }

  const DeviceInfo& info() const override { return info_; }

  void apply_limits(const std::string& profile) {
    std::lock_guard lock(mu_);
    if (profile == "webgpu") {
      max_buffers_ = 8;
      profile_ = profile;
    } else if (profile == "device") {
      max_buffers_ = static_cast<int>(std::min<std::uint32_t>(ctx_->desc().max_storage_buffers, 1u << 20));
      profile_ = profile;
    } else {
      throw BackendError(fmt::format("vulkan: unknown limits profile '{}' (webgpu or device)", profile));
    }
    info_.limits = {max_buffers_, ctx_->desc().float64};
  }
  std::string profile() const { return profile_; }

  // ---- slots ----
  SlotId malloc(const AVal& tag) override {
    std::lock_guard lock(mu_);
    alive();
    const std::size_t n = tag.bytes();
    std::unique_ptr<Buf> b = acquire(n);
    const SlotId id = new_slot_id();
    slots_.emplace(id, Slot{std::move(b), n, tag, 1});
    bytes_ += n;
    peak_ = std::max(peak_, bytes_);
    return id;
  }
  void incref(SlotId id) override {
    std::lock_guard lock(mu_);
    if (!ctx_) return;
    get(id).refs++;
  }
  void decref(SlotId id) override {
    std::lock_guard lock(mu_);
    if (!ctx_) return;  // after shutdown
    Slot& s = get(id);
    if (--s.refs > 0) return;
    bytes_ -= s.bytes;
    std::unique_ptr<Buf> b = std::move(s.buf);
    slots_.erase(id);
    used_.erase(id);
    if (current_ && current_->commands > 0) current_->released.push_back(std::move(b));
    else if (!inflight_.empty()) inflight_.back()->released.push_back(std::move(b));
    else give_back(std::move(b));
  }
  void write(SlotId id, std::span<const std::byte> src) override {
    std::lock_guard lock(mu_);
    alive();
    Slot& s = get(id);
    if (src.size() > s.bytes) throw BackendError(fmt::format("vulkan: write of {} bytes into a {}-byte slot", src.size(), s.bytes));
    counters_.bytes_uploaded += src.size();
    if (src.empty()) return;
    if (s.buf->mapped) {
      if (used_.count(id)) finish();
      std::memcpy(s.buf->mapped, src.data(), src.size());
      return;
    }
    auto st = create_staging(src.size());
    std::memcpy(st->mapped, src.data(), src.size());
    Batch& b = recording();
    VkBufferCopy c{0, 0, src.size()};
    barrier_if({s.buf->buf.get()}, b);
    vkCmdCopyBuffer(b.cmd, st->buf.get(), s.buf->buf.get(), 1, &c);
    written_.insert(s.buf->buf.get());
    used_.insert(id);
    b.commands++;
    b.staging.push_back(std::move(st));
  }
  void read(SlotId id, std::span<std::byte> dst) override {
    std::lock_guard lock(mu_);
    alive();
    Slot& s = get(id);
    if (dst.size() > s.bytes) throw BackendError(fmt::format("vulkan: read of {} bytes from a {}-byte slot", dst.size(), s.bytes));
    counters_.bytes_downloaded += dst.size();
    if (dst.empty()) return;
    if (s.buf->mapped) {
      if (used_.count(id)) finish();
      std::memcpy(dst.data(), s.buf->mapped, dst.size());
      return;
    }
    auto st = create_staging(dst.size());
    Batch& b = recording();
    barrier_if({s.buf->buf.get()}, b);
    VkBufferCopy c{0, 0, dst.size()};
    vkCmdCopyBuffer(b.cmd, s.buf->buf.get(), st->buf.get(), 1, &c);
    b.commands++;
    finish();  // `st` outlives the batch that copies into it
    std::memcpy(dst.data(), st->mapped, dst.size());
  }
  std::size_t slot_count() const override {
    std::lock_guard lock(mu_);
    return slots_.size();
  }
  std::size_t bytes() const override {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  std::vector<SlotInfo> live_slots() const override {
    std::lock_guard lock(mu_);
    std::vector<SlotInfo> v;
    for (auto& [id, s] : slots_) v.push_back({id, s.bytes, s.tag});
    return v;
  }
  BackendMemory memory() const override {
    std::lock_guard lock(mu_);
    BackendMemory m{slots_.size(), bytes_, peak_, pooled_bytes_, 0, 0};
    m.compiled_kernels = kernels_.size() + scans_.size();
    m.pipelines = pipes_ ? pipes_->size() : 0;
    return m;
  }
  void clear_caches() override {
    std::lock_guard lock(mu_);
    if (!ctx_) return;
    finish();
    kernels_.clear();
    scans_.clear();
    spirv_.clear();
    pipes_->clear();
    for (auto& [cls, v] : free_) v.clear();
    free_.clear();
    pooled_bytes_ = 0;
  }

  // ---- executables ----
  std::shared_ptr<Executable> prepare(const Op& op) override {
    std::lock_guard lock(mu_);
    alive();
    switch (prim_kind(op.prim)) {
      case PrimKind::routine: case PrimKind::movement: case PrimKind::reduce: break;
      default: return nullptr;
    }
    if (op.prim == Prim::cholesky || op.prim == Prim::triangular_solve || op.prim == Prim::lu) {
      auto e = std::make_shared<HostRoutineExe>();
      e->op = op;
      e->host = make_host_op_executable(op);
      return e;
    }
    // a concatenate over the budget goes through the lowering, which splits it into a tree
    if (op.prim == Prim::concatenate && static_cast<int>(op.in.size()) + 1 > max_buffers_) return nullptr;
    auto sh = render_routine(op);
    if (!sh) return nullptr;  // lowered to kernels by the runtime
    return make_kernel_exe(*sh, fmt::format("{}|{}", prim_name(op.prim), sh->glsl));
  }
  std::shared_ptr<Executable> prepare_kernel(const Kernel& k) override {
    std::lock_guard lock(mu_);
    alive();
    const std::string key = k.key();
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    auto exe = make_kernel_exe(render_kernel(k, ctx_->desc().float64), key);
    kernels_[key] = exe;
    return exe;
  }

  std::shared_ptr<Executable> prepare_scan(const ScanProgram& sp, std::string& why) override {
    std::lock_guard lock(mu_);
    alive();
    const bool no_wg = replay::policy().no_workgroup_scan_fusion;
    const std::string key = fmt::format("{}|{}|{}", sp.key(), profile_, no_wg);
    if (auto it = scans_.find(key); it != scans_.end()) {
      why = it->second.second;
      return it->second.first;
    }
    const auto& d = ctx_->desc();
    ScanLimits lim{d.float64, profile_ == "webgpu" ? std::int64_t{16384} : static_cast<std::int64_t>(d.max_shared_bytes),
                   llvmpipe() ? std::int64_t{65535} : std::int64_t{0}};
    std::string not_fused;
    std::shared_ptr<Executable> exe;
    auto plan = render_fused_scan(sp, lim, not_fused);
    if (no_wg && (!plan || plan->one_workgroup)) {  // replay: the JS runtime's host loop, one step at a time
      why = fmt::format("replay no_workgroup_scan_fusion: {}", plan ? "the body has dependencies between its kernels" : not_fused);
      scans_[key] = {nullptr, why};
      return nullptr;
    }
    if (plan) {
      auto x = std::make_shared<ScanExe>();
      x->pipe = make_kernel_exe(plan->sh, "scan|" + plan->sh.glsl, 8)->pipe;
      x->operands = sp.operands;
      x->results = sp.results;
      x->length = sp.length;
      why = plan->steps_per_dispatch < sp.length
                ? fmt::format("{}; {} steps per dispatch ({} stops shader loops after 65535 iterations)", plan->mode, plan->steps_per_dispatch, d.name)
                : plan->mode;
      x->plan = std::move(*plan);
      exe = x;
    } else {
      auto x = std::make_shared<PreencodedExe>();
      x->sp = sp;
      for (const Step& st : sp.body.steps) {
        if (st.kind == Step::Kind::free) continue;
        if (st.kind == Step::Kind::control) {
          why = fmt::format("not fused: {}; not preencoded: a nested scan needs its own loop", not_fused);
          return nullptr;
        }
        std::shared_ptr<Executable> e = st.kind == Step::Kind::kernel ? prepare_kernel(sp.body.kernels[st.index]) : prepare(sp.body.routines[st.index]);
        if (!e || dynamic_cast<HostRoutineExe*>(e.get())) {
          why = fmt::format("not fused: {}; not preencoded: {} runs on the host", not_fused, prim_name(sp.body.routines[st.index].prim));
          return nullptr;
        }
        x->steps.push_back(std::move(e));
      }
      if (x->steps.size() + 8 > kSetsPerBatch) {
        why = fmt::format("not fused: {}; not preencoded: {} dispatches per step", not_fused, x->steps.size());
        return nullptr;
      }
      why = fmt::format("not fused: {}; {} dispatches per step", not_fused, x->steps.size());
      exe = x;
    }
    scans_[key] = {exe, why};
    return exe;
  }

  std::shared_ptr<Executable> prepare_associative_scan(const AssocProgram& ap, std::string& why) override {
    std::lock_guard lock(mu_);
    alive();
    const std::string key = fmt::format("{}|{}", ap.key(), profile_);
    if (auto it = scans_.find(key); it != scans_.end()) {
      why = it->second.second;
      return it->second.first;
    }
    const auto& d = ctx_->desc();
    ScanLimits lim{d.float64, 0, llvmpipe() ? std::int64_t{65535} : std::int64_t{0}};
    auto plan = render_assoc_scan(ap, lim, why);
    if (!plan) return nullptr;
    auto x = std::make_shared<AssocExe>();
    x->pipe = make_kernel_exe(plan->sh, "assoc|" + plan->sh.glsl, 4)->pipe;
    x->operands = ap.operands;
    x->num_consts = ap.num_consts;
    x->length = ap.operands[ap.num_consts].shape[ap.axis];
    x->plan = std::move(*plan);
    int rounds = 0;
    for (std::int64_t dd = 1; dd < x->length; dd *= 2) ++rounds;
    why = fmt::format("Kogge-Stone: {} rounds of one shader (one invocation per position, every leaf at once)", rounds);
    scans_[key] = {x, why};
    return x;
  }

  void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) override {
    std::lock_guard lock(mu_);
    alive();
    if (auto* hr = dynamic_cast<HostRoutineExe*>(&exe)) return host_routine(*hr, in, out);
    if (auto* sc = dynamic_cast<ScanExe*>(&exe)) return run_scan(*sc, in, out);
    if (auto* pe = dynamic_cast<PreencodedExe*>(&exe)) return run_preencoded(*pe, in, out);
    if (auto* as = dynamic_cast<AssocExe*>(&exe)) return run_assoc(*as, in, out);
    auto& k = static_cast<KernelExe&>(exe);
    if (k.invocations == 0) return;
    std::vector<VkBuffer> bufs;
    for (auto id : in) bufs.push_back(get(id).buf->buf.get());
    for (auto id : out) bufs.push_back(get(id).buf->buf.get());
    Batch* b = &recording();
    if (b->sets + 1 > kSetsPerBatch || b->descriptors + bufs.size() > kDescriptorsPerBatch) {
      submit();
      b = &recording();
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = b->dpool.get();
    ai.descriptorSetCount = 1;
    VkDescriptorSetLayout sl = k.pipe->set_layout.get();
    ai.pSetLayouts = &sl;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vkAllocateDescriptorSets(ctx_->device(), &ai, &set), "vkAllocateDescriptorSets");
    b->sets++;
    b->descriptors += static_cast<std::uint32_t>(bufs.size());
    std::vector<VkDescriptorBufferInfo> infos(bufs.size());
    std::vector<VkWriteDescriptorSet> writes(bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      infos[i] = {bufs[i], 0, VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, static_cast<std::uint32_t>(i), 0, 1,
                   VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &infos[i], nullptr};
    }
    vkUpdateDescriptorSets(ctx_->device(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
    barrier_if(bufs, *b);
    vkCmdBindPipeline(b->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipe->pipeline.get());
    vkCmdBindDescriptorSets(b->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipe->layout.get(), 0, 1, &set, 0, nullptr);
    auto [gx, gy] = workgroups(k.invocations);
    vkCmdDispatch(b->cmd, gx, gy, 1);
    for (auto id : out) written_.insert(get(id).buf->buf.get());
    for (auto id : in) used_.insert(id);
    for (auto id : out) used_.insert(id);
    b->commands++;
    counters_.dispatches++;
    counters_.max_buffers_per_dispatch = std::max<std::uint64_t>(counters_.max_buffers_per_dispatch, bufs.size());
  }

  // ---- control ----
  void synchronize() {
    std::lock_guard lock(mu_);
    if (ctx_) finish();
  }
  vulkan::Counters counters() const {
    std::lock_guard lock(mu_);
    vulkan::Counters c = counters_;
    c.pipeline_creations = pipes_ ? pipes_->creations() - creations_base_ : 0;
    return c;
  }
  void reset_counters() {
    std::lock_guard lock(mu_);
    counters_ = {};
    creations_base_ = pipes_ ? pipes_->creations() : 0;
  }

  // Waits for the device, then destroys every Vulkan object (registered with atexit: after it,
  // handles still alive only drop their references). At process exit the instance is left to the
  // process's end (destroying it from an exit handler makes the loader unload lavapipe, whose
  // libLLVM then double-frees); vulkan::shutdown() from the program destroys it too.
  void shutdown(bool with_instance = false) {
    clear_program_caches_for_shutdown();  // compiled programs drop their pipelines first
    std::lock_guard lock(mu_);
    if (!ctx_) return;
    try {
      finish();
    } catch (const Error&) {
    }
    vkDeviceWaitIdle(ctx_->device());
    current_.reset();
    inflight_.clear();
    spare_.clear();
    slots_.clear();
    free_.clear();
    kernels_.clear();
    scans_.clear();
    spirv_.clear();
    pipes_->release_all();
    pipes_.reset();
    if (!with_instance) ctx_->release_at_exit();
    ctx_.reset();  // the last reference: the device (and, from vulkan::shutdown(), the instance) goes
    info_.available = false;
    info_.reason = with_instance ? "the vulkan backend was shut down (vulkan::shutdown)" : "the vulkan backend was shut down (process exit)";
    g_instance = nullptr;
  }

 private:
  struct Slot {
    std::unique_ptr<Buf> buf;
    std::size_t bytes;
    AVal tag;
    std::int64_t refs;
  };

  void alive() const {
    if (!ctx_) throw BackendError(fmt::format("vulkan: backend unavailable: {}", info_.reason));
  }
  Slot& get(SlotId id) {
    auto it = slots_.find(id);
    if (it == slots_.end()) throw BackendError(fmt::format("vulkan: slot {} does not exist (already freed)", id));
    return it->second;
  }

  void choose_memory() {
    const auto& mp = ctx_->memory_properties();
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int dl = -1, mapped = -1, staging = -1;
    for (std::uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
      const auto f = mp.memoryTypes[i].propertyFlags;
      const auto heap = mp.memoryHeaps[mp.memoryTypes[i].heapIndex].size;
      if ((f & want) == want && heap >= (std::uint64_t{1} << 30) && mapped < 0) mapped = static_cast<int>(i);
      if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dl < 0) dl = static_cast<int>(i);
      if ((f & host) == host && staging < 0) staging = static_cast<int>(i);
    }
    if (mapped >= 0) {
      host_visible_ = true;
      mem_type_ = static_cast<std::uint32_t>(mapped);
    } else if (dl >= 0 && staging >= 0) {
      host_visible_ = false;
      mem_type_ = static_cast<std::uint32_t>(dl);
    } else if (staging >= 0) {
      host_visible_ = true;
      mem_type_ = static_cast<std::uint32_t>(staging);
    } else {
      throw BackendError("vulkan: no usable memory type for storage buffers");
    }
    staging_type_ = static_cast<std::uint32_t>(staging);
  }

  std::unique_ptr<Buf> create_buffer(std::size_t bytes, std::uint32_t type, bool map_it = false) {
    VkDevice d = ctx_->device();
    auto b = std::make_unique<Buf>();
    b->capacity = bytes;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buf = VK_NULL_HANDLE;
    check(vkCreateBuffer(d, &bi, nullptr, &buf), "vkCreateBuffer");
    b->buf = BufferH(d, buf);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d, buf, &req);
    if (!(req.memoryTypeBits & (1u << type))) throw BackendError("vulkan: the chosen memory type cannot back storage buffers");
    VkMemoryAllocateInfo mi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mi.allocationSize = req.size;
    mi.memoryTypeIndex = type;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkResult r = vkAllocateMemory(d, &mi, nullptr, &mem);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {  // give the pool back and retry once
      trim_pool();
      r = vkAllocateMemory(d, &mi, nullptr, &mem);
    }
    if (r != VK_SUCCESS)
      throw BackendError(fmt::format("vulkan: out of device memory allocating {} bytes ({}; {} bytes live)", bytes, result_name(r), bytes_));
    b->mem = MemoryH(d, mem);
    check(vkBindBufferMemory(d, buf, mem, 0), "vkBindBufferMemory");
    if (map_it || (type == mem_type_ && host_visible_)) check(vkMapMemory(d, mem, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
    return b;
  }
  std::unique_ptr<Buf> create_staging(std::size_t bytes) { return create_buffer(bytes, staging_type_, true); }

  void give_back(std::unique_ptr<Buf> b) {
    if (pooled_bytes_ + b->capacity > pool_budget_) trim_pool();
    pooled_bytes_ += b->capacity;
    free_[b->capacity].push_back(std::move(b));
  }
  void trim_pool() {
    free_.clear();
    pooled_bytes_ = 0;
  }

  bool llvmpipe() const { return ctx_->desc().name.find("llvmpipe") != std::string::npos; }

  std::shared_ptr<KernelExe> make_kernel_exe(const Shader& sh, const std::string& key, std::uint32_t push_bytes = 0) {
    if (sh.buffers > max_buffers_)
      throw BackendError(profile_ == "webgpu" ? fmt::format("Too many buffers ({}) for WebGPU pipeline (max: {})", sh.buffers, max_buffers_)
                                              : fmt::format("Too many buffers ({}) for the device's pipeline (max: {})", sh.buffers, max_buffers_));
    // llvmpipe ends every shader loop after 65535 iterations in total (its loop limiter): refuse
    // rather than return a truncated reduction.
    if (sh.max_loop > 65535 && llvmpipe())
      throw BackendError(fmt::format("vulkan: {} loops {} times per invocation, but {} stops shader loops after 65535 iterations "
                                     "(reductions over more than 65535 elements per output need a GPU driver)",
                                     sh.name, sh.max_loop, ctx_->desc().name));
    if (sh.float64 && !ctx_->desc().float64)
      throw BackendError(fmt::format("vulkan: {} needs float64 but {} has no shaderFloat64", sh.name, ctx_->desc().name));
    auto exe = std::make_shared<KernelExe>();
    auto it = spirv_.find(key);
    if (it == spirv_.end()) {
      const auto t0 = std::chrono::steady_clock::now();
      auto spirv = compile_glsl(sh.glsl, sh.name);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      trace::emit({trace::EventKind::compile, "vulkan", "glslang", 0, false, ms, sh.name});
      debug_log(2, fmt::format("vulkan GLSL for {}:\n{}", sh.name, sh.glsl));
      it = spirv_.emplace(key, std::move(spirv)).first;
    }
    exe->pipe = pipes_->get(it->second, sh.buffers, sh.name, push_bytes);
    exe->invocations = sh.invocations;
    exe->buffers = sh.buffers;
    return exe;
  }

  std::unique_ptr<Buf> acquire(std::size_t n) {
    const std::size_t cls = size_class(n);
    if (auto it = free_.find(cls); it != free_.end() && !it->second.empty()) {
      std::unique_ptr<Buf> b = std::move(it->second.back());
      it->second.pop_back();
      pooled_bytes_ -= cls;
      return b;
    }
    return create_buffer(cls, mem_type_);
  }

  // A barrier before a command that reads `reads` and writes `writes` when it would see a write
  // not yet made visible (RAW, WAW) or overwrite what an earlier command may still read (WAR).
  void barrier_for(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes, Batch& b) {
    bool need = false;
    for (VkBuffer x : reads) need = need || written_.count(x);
    for (VkBuffer x : writes) need = need || written_.count(x) || read_.count(x);
    if (need) barrier(b);
    read_.insert(reads.begin(), reads.end());
    written_.insert(writes.begin(), writes.end());
  }
  void copy(Batch& b, VkBuffer src, std::size_t src_off, VkBuffer dst, std::size_t dst_off, std::size_t bytes) {
    if (!bytes) return;
    barrier_for({src}, {dst}, b);
    VkBufferCopy c{src_off, dst_off, bytes};
    vkCmdCopyBuffer(b.cmd, src, dst, 1, &c);
    b.commands++;
    counters_.copies++;
  }
  VkDescriptorSet bind_set(Batch& b, const Pipeline& pipe, const std::vector<VkBuffer>& bufs) {
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = b.dpool.get();
    ai.descriptorSetCount = 1;
    VkDescriptorSetLayout sl = pipe.set_layout.get();
    ai.pSetLayouts = &sl;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vkAllocateDescriptorSets(ctx_->device(), &ai, &set), "vkAllocateDescriptorSets");
    b.sets++;
    b.descriptors += static_cast<std::uint32_t>(bufs.size());
    std::vector<VkDescriptorBufferInfo> infos(bufs.size());
    std::vector<VkWriteDescriptorSet> writes(bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      infos[i] = {bufs[i], 0, VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, static_cast<std::uint32_t>(i), 0, 1,
                   VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &infos[i], nullptr};
    }
    vkUpdateDescriptorSets(ctx_->device(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
    return set;
  }
  void record_dispatch(Batch& b, const Pipeline& pipe, VkDescriptorSet set, std::int64_t invocations, int buffers) {
    vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline.get());
    vkCmdBindDescriptorSets(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout.get(), 0, 1, &set, 0, nullptr);
    auto [gx, gy] = workgroups(invocations);
    vkCmdDispatch(b.cmd, gx, gy, 1);
    b.commands++;
    counters_.dispatches++;
    counters_.max_buffers_per_dispatch = std::max<std::uint64_t>(counters_.max_buffers_per_dispatch, static_cast<std::uint64_t>(buffers));
  }
  Batch& batch_with_room(std::uint32_t sets, std::uint32_t descriptors) {
    Batch* b = &recording();
    if (b->sets + sets > kSetsPerBatch || b->descriptors + descriptors > kDescriptorsPerBatch) {
      submit();
      b = &recording();
    }
    return *b;
  }
  void touch(std::span<const SlotId> in, std::span<const SlotId> out) {
    for (auto id : in) used_.insert(id);
    for (auto id : out) used_.insert(id);
  }

  // Fused scan: operand slots copied into one packed buffer, the loop shader (one dispatch, or
  // one per chunk of steps where the driver limits loop iterations), results copied out.
  void run_scan(ScanExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
    const ScanShader& p = x.plan;
    Batch& b = batch_with_room(1, 2);
    std::unique_ptr<Buf> gin = acquire(static_cast<std::size_t>(p.in_size) * 4), gout = acquire(static_cast<std::size_t>(p.out_size) * 4);
    for (std::size_t i = 0; i < in.size(); ++i)
      copy(b, get(in[i]).buf->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.in_words[i]) * 4, x.operands[i].bytes());
    VkDescriptorSet set = bind_set(b, *x.pipe, {gin->buf.get(), gout->buf.get()});
    // a length-0 scan still runs once over no steps: it moves the init carries to the results
    for (std::int64_t it0 = 0; it0 < std::max<std::int64_t>(x.length, 1); it0 += p.steps_per_dispatch) {
      barrier_for({gin->buf.get(), gout->buf.get()}, {gout->buf.get()}, b);
      const std::int32_t range[2] = {static_cast<std::int32_t>(it0), static_cast<std::int32_t>(std::min(x.length, it0 + p.steps_per_dispatch))};
      vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(range), range);
      record_dispatch(b, *x.pipe, set, p.sh.invocations, 2);
    }
    for (std::size_t r = 0; r < out.size(); ++r)
      copy(b, gout->buf.get(), static_cast<std::size_t>(p.out_words[r]) * 4, get(out[r]).buf->buf.get(), 0, x.results[r].bytes());
    b.released.push_back(std::move(gin));
    b.released.push_back(std::move(gout));
    touch(in, out);
  }

  // Kogge-Stone: leaves packed into one buffer, rounds d = 1, 2, 4, ... ping-pong between two.
  void run_assoc(AssocExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
    const AssocShader& p = x.plan;
    const std::size_t nc = static_cast<std::size_t>(x.num_consts);
    Batch& b = batch_with_room(2, 6);
    std::unique_ptr<Buf> gin = acquire(static_cast<std::size_t>(p.const_size) * 4);
    std::unique_ptr<Buf> q[2] = {acquire(static_cast<std::size_t>(p.leaf_size) * 4), acquire(static_cast<std::size_t>(p.leaf_size) * 4)};
    for (std::size_t i = 0; i < nc; ++i)
      copy(b, get(in[i]).buf->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.const_words[i]) * 4, x.operands[i].bytes());
    for (std::size_t l = 0; l + nc < in.size(); ++l)
      copy(b, get(in[nc + l]).buf->buf.get(), 0, q[0]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4, x.operands[nc + l].bytes());
    VkDescriptorSet sets[2] = {bind_set(b, *x.pipe, {gin->buf.get(), q[0]->buf.get(), q[1]->buf.get()}),
                               bind_set(b, *x.pipe, {gin->buf.get(), q[1]->buf.get(), q[0]->buf.get()})};
    int cur = 0;
    for (std::int64_t d = 1; d < x.length; d *= 2, cur ^= 1) {
      barrier_for({gin->buf.get(), q[cur]->buf.get()}, {q[cur ^ 1]->buf.get()}, b);
      const std::int32_t dd = static_cast<std::int32_t>(d);
      vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(dd), &dd);
      record_dispatch(b, *x.pipe, sets[cur], p.sh.invocations, 3);
    }
    for (std::size_t l = 0; l < out.size(); ++l)
      copy(b, q[cur]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4, get(out[l]).buf->buf.get(), 0, x.operands[nc + l].bytes());
    b.released.push_back(std::move(gin));
    b.released.push_back(std::move(q[0]));
    b.released.push_back(std::move(q[1]));
    touch(in, out);
  }

  // Preencoded scan: the body's dispatches for every step recorded in order, x slices and ys
  // moved by buffer copies, carries in buffers of their own (staged when a carry output is
  // another carry). One descriptor set per body step serves every step.
  void run_preencoded(PreencodedExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
    const ScanProgram& sp = x.sp;
    const Program& body = sp.body;
    const int nc = sp.num_consts, nk = sp.num_carry, nin = body.num_inputs;
    const std::size_t ny = body.outputs.size() - nk;
    Batch* bp = &batch_with_room(static_cast<std::uint32_t>(x.steps.size()), static_cast<std::uint32_t>(x.steps.size()) * 9);
    Batch& b = *bp;
    std::vector<VkBuffer> buf(body.buffers.size(), VK_NULL_HANDLE);
    std::vector<std::unique_ptr<Buf>> own;
    auto fresh = [&](std::size_t bytes) {
      own.push_back(acquire(bytes));
      return own.back()->buf.get();
    };
    for (int i = 0; i < nc; ++i) buf[i] = get(in[i]).buf->buf.get();
    for (std::size_t i = nc; i < body.buffers.size(); ++i) buf[i] = fresh(body.buffers[i].bytes());
    std::vector<VkBuffer> stage(nk, VK_NULL_HANDLE);
    for (int k = 0; k < nk; ++k) stage[k] = fresh(body.buffers[nc + k].bytes());
    std::vector<VkDescriptorSet> sets;
    std::vector<const Step*> steps;
    for (const Step& st : body.steps)
      if (st.kind != Step::Kind::free) steps.push_back(&st);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::vector<VkBuffer> bs;
      for (int v : steps[i]->in) bs.push_back(buf[v]);
      for (int v : steps[i]->out) bs.push_back(buf[v]);
      sets.push_back(bind_set(b, *static_cast<KernelExe&>(*x.steps[i]).pipe, bs));
    }
    for (int k = 0; k < nk; ++k) copy(b, get(in[nc + k]).buf->buf.get(), 0, buf[nc + k], 0, body.buffers[nc + k].bytes());
    for (std::int64_t it = 0; it < sp.length; ++it) {
      const std::int64_t t = sp.reverse ? sp.length - 1 - it : it;
      for (int j = nc + nk; j < nin; ++j) {
        const std::size_t bytes = body.buffers[j].bytes();
        copy(b, get(in[j]).buf->buf.get(), static_cast<std::size_t>(t) * bytes, buf[j], 0, bytes);
      }
      for (std::size_t i = 0; i < steps.size(); ++i) {
        auto& k = static_cast<KernelExe&>(*x.steps[i]);
        if (k.invocations == 0) continue;
        std::vector<VkBuffer> reads, writes;
        for (int v : steps[i]->in) reads.push_back(buf[v]);
        for (int v : steps[i]->out) writes.push_back(buf[v]);
        barrier_for(reads, writes, b);
        record_dispatch(b, *k.pipe, sets[i], k.invocations, k.buffers);
      }
      for (std::size_t j = 0; j < ny; ++j) {
        const int o = body.outputs[nk + j];
        const std::size_t bytes = body.buffers[o].bytes();
        copy(b, buf[o], 0, get(out[nk + j]).buf->buf.get(), static_cast<std::size_t>(t) * bytes, bytes);
      }
      for (int k = 0; k < nk; ++k)
        if (body.outputs[k] != nc + k) copy(b, buf[body.outputs[k]], 0, stage[k], 0, body.buffers[nc + k].bytes());
      for (int k = 0; k < nk; ++k)
        if (body.outputs[k] != nc + k) copy(b, stage[k], 0, buf[nc + k], 0, body.buffers[nc + k].bytes());
    }
    for (int k = 0; k < nk; ++k) copy(b, buf[nc + k], 0, get(out[k]).buf->buf.get(), 0, body.buffers[nc + k].bytes());
    for (auto& o : own) b.released.push_back(std::move(o));
    touch(in, out);
  }

  void host_routine(HostRoutineExe& r, std::span<const SlotId> in, std::span<const SlotId> out) {
    counters_.host_routines++;
    std::vector<std::vector<std::byte>> ib, ob;
    for (std::size_t i = 0; i < in.size(); ++i) {
      ib.emplace_back(r.op.in[i].bytes());
      read(in[i], ib.back());
    }
    for (std::size_t i = 0; i < out.size(); ++i) ob.emplace_back(r.op.out[i].bytes());
    std::vector<const std::byte*> ip;
    std::vector<std::byte*> op;
    for (auto& v : ib) ip.push_back(v.data());
    for (auto& v : ob) op.push_back(v.data());
    r.host->run(ip, op);
    for (std::size_t i = 0; i < out.size(); ++i) write(out[i], ob[i]);
  }

  // ---- recording and submission ----
  Batch& recording() {
    if (current_) return *current_;
    std::unique_ptr<Batch> b;
    if (!spare_.empty()) {
      b = std::move(spare_.back());
      spare_.pop_back();
    } else {
      b = make_batch();
    }
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(b->cmd, &bi), "vkBeginCommandBuffer");
    written_.clear();
    read_.clear();
    current_ = std::move(b);
    return *current_;
  }
  std::unique_ptr<Batch> make_batch() {
    VkDevice d = ctx_->device();
    auto b = std::make_unique<Batch>();
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.queueFamilyIndex = ctx_->family();
    VkCommandPool pool = VK_NULL_HANDLE;
    check(vkCreateCommandPool(d, &pi, nullptr, &pool), "vkCreateCommandPool");
    b->pool = CommandPoolH(d, pool);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(d, &ai, &b->cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence f = VK_NULL_HANDLE;
    check(vkCreateFence(d, &fi, nullptr, &f), "vkCreateFence");
    b->fence = FenceH(d, f);
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerBatch};
    VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dci.maxSets = kSetsPerBatch;
    dci.poolSizeCount = 1;
    dci.pPoolSizes = &ps;
    VkDescriptorPool dp = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(d, &dci, nullptr, &dp), "vkCreateDescriptorPool");
    b->dpool = DescriptorPoolH(d, dp);
    return b;
  }
  // RAW/WAW: a compute barrier before any command touching a buffer written since the last one.
  void barrier_if(const std::vector<VkBuffer>& bufs, Batch& b) {
    bool need = false;
    for (VkBuffer x : bufs) need = need || written_.count(x);
    if (need) barrier(b);
  }
  void barrier(Batch& b) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(b.cmd, st, st, 0, 1, &mb, 0, nullptr, 0, nullptr);
    written_.clear();
    read_.clear();
    counters_.barriers++;
  }
  // Ends and submits the recording batch (no wait).
  void submit() {
    if (!current_) return;
    Batch& b = *current_;
    if (!host_visible_) {  // make transfer writes visible to the host for staged reads
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                           0, nullptr, 0, nullptr);
    } else {
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    }
    check(vkEndCommandBuffer(b.cmd), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &b.cmd;
    check(vkQueueSubmit(ctx_->queue(), 1, &si, b.fence.get()), "vkQueueSubmit");
    counters_.submits++;
    inflight_.push_back(std::move(current_));
    written_.clear();
    read_.clear();
  }
  // Submits what is recorded and waits for everything in flight; recycles the batches.
  void finish() {
    if (current_ && current_->commands == 0) {  // nothing recorded: end it unsubmitted
      check(vkEndCommandBuffer(current_->cmd), "vkEndCommandBuffer");
      recycle(std::move(current_));
    }
    submit();
    if (inflight_.empty()) return;
    std::vector<VkFence> fences;
    for (auto& b : inflight_) fences.push_back(b->fence.get());
    counters_.host_waits++;
    check(vkWaitForFences(ctx_->device(), static_cast<std::uint32_t>(fences.size()), fences.data(), VK_TRUE, UINT64_MAX), "vkWaitForFences");
    while (!inflight_.empty()) {
      recycle(std::move(inflight_.front()));
      inflight_.pop_front();
    }
    used_.clear();
  }
  void recycle(std::unique_ptr<Batch> b) {
    VkDevice d = ctx_->device();
    for (auto& r : b->released) give_back(std::move(r));
    b->released.clear();
    b->staging.clear();
    VkFence f = b->fence.get();
    check(vkResetFences(d, 1, &f), "vkResetFences");
    check(vkResetCommandPool(d, b->pool.get(), 0), "vkResetCommandPool");
    check(vkResetDescriptorPool(d, b->dpool.get(), 0), "vkResetDescriptorPool");
    b->sets = b->descriptors = 0;
    b->commands = 0;
    spare_.push_back(std::move(b));
  }

  DeviceInfo info_;
  std::shared_ptr<Context> ctx_;  // pipelines still held elsewhere keep the device until they go
  std::unique_ptr<Pipelines> pipes_;
  mutable std::recursive_mutex mu_;
  std::string profile_ = "webgpu";
  int max_buffers_ = 8;
  bool host_visible_ = true;
  std::uint32_t mem_type_ = 0, staging_type_ = 0;
  std::unordered_map<SlotId, Slot> slots_;
  std::map<std::size_t, std::vector<std::unique_ptr<Buf>>> free_;
  std::size_t bytes_ = 0, peak_ = 0, pooled_bytes_ = 0, pool_budget_ = std::size_t{256} << 20;
  std::unordered_map<std::string, std::shared_ptr<KernelExe>> kernels_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<Executable>, std::string>> scans_;  // with the planner's reason
  std::unordered_map<std::string, std::vector<std::uint32_t>> spirv_;
  std::unique_ptr<Batch> current_;
  std::deque<std::unique_ptr<Batch>> inflight_;
  std::vector<std::unique_ptr<Batch>> spare_;
  std::unordered_set<VkBuffer> written_;
  std::unordered_set<VkBuffer> read_;  // read since the last barrier (scans rewrite buffers they read)
  std::unordered_set<SlotId> used_;  // slots touched by work not yet known complete
  vulkan::Counters counters_;
  std::size_t creations_base_ = 0;
};

VulkanBackend* instance() {
  Backend& b = backend("vulkan");  // throws BackendError with the reason when unavailable
  return static_cast<VulkanBackend*>(&b);
}

}  // namespace

std::unique_ptr<Backend> make_vulkan_backend() { return std::make_unique<VulkanBackend>(); }

namespace vulkan {

Counters counters() { return instance()->counters(); }
void reset_counters() { instance()->reset_counters(); }
void set_limits(const std::string& profile) { instance()->apply_limits(profile); }
std::string limits() { return instance()->profile(); }
void synchronize() {
  if (g_instance) g_instance->synchronize();  // never started or shut down: nothing is pending
}
void shutdown() {
  if (g_instance) g_instance->shutdown(true);
}
std::size_t validation_message_count() { return vk::validation_message_count(); }
std::vector<std::string> validation_messages() { return vk::validation_messages(); }

std::vector<std::string> describe_devices() {
  std::string why;
  auto devs = vk::enumerate_devices(why);
  std::vector<std::string> out;
  if (devs.empty()) out.push_back(fmt::format("no Vulkan device: {}", why));
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const auto& d = devs[i];
    out.push_back(fmt::format("{}: {} ({}; driver {}; Vulkan {}.{}; float64 {}; storage buffers/stage {}; invocations/workgroup {}; "
                              "shared memory {} B)",
                              i, d.name, d.type, d.driver, VK_API_VERSION_MAJOR(d.api), VK_API_VERSION_MINOR(d.api), d.float64 ? "yes" : "no",
                              d.max_storage_buffers, d.max_invocations, d.max_shared_bytes));
  }
  return out;
}

}  // namespace vulkan
}  // namespace jx
