// The vulkan backend's slots (a size-class pool of device buffers with a byte budget), kernel and
// routine executables, dispatch, shutdown, and the public vulkan:: API. Recording and submission
// live in vk_recorder.cc, scans in vk_scan_exec.cc; the class is in vulkan_backend_impl.h.
#include "core/backends/vulkan/vulkan_backend_impl.h"

#include "core/backends/vulkan/glsl_linalg.h"

namespace jx {
namespace vk {

VulkanBackend* g_instance = nullptr;

namespace {
std::uint32_t parse_submit_every(const std::string& v) {
  std::size_t used = 0;
  unsigned long n = 0;
  try {
    n = std::stoul(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v[0] == '-' || n > 1000000)
    throw Error(fmt::format(
        "JX_VK_SUBMIT_EVERY='{}': expected a number of commands per submit, 0 to 1000000 (0: submit only full batches)",
        v));
  return static_cast<std::uint32_t>(n);
}
bool parse_switch(const char* name, const std::string& v) {
  if (v == "0" || v == "1") return v == "1";
  throw Error(fmt::format("{}='{}': expected 0 or 1", name, v));
}
}  // namespace

VulkanBackend::VulkanBackend() {
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
    const char* timing = std::getenv("JX_VK_TIMING");
    timing_ = timing && *timing && std::string(timing) != "0";
    if (const char* every = std::getenv("JX_VK_SUBMIT_EVERY"); every && *every)
      submit_every_ = parse_submit_every(every);
    checked_shared_ = llvmpipe();
    if (const char* chk = std::getenv("JX_VK_CHECK_SHARED"); chk && *chk)
      checked_shared_ = parse_switch("JX_VK_CHECK_SHARED", chk);
    g_instance = this;
    std::atexit([] {
      if (g_instance) g_instance->shutdown(true);
    });
  } catch (const Error& e) {
    pipes_.reset();
    ctx_.reset();
    info_.available = false;
    info_.reason = e.what();
  }
}

void VulkanBackend::apply_limits(const std::string& profile) {
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
  info_.limits = {max_buffers_, ctx_->desc().float64, true, kSplitReductionMin, true};
}

SlotId VulkanBackend::malloc(const AVal& tag) {
  std::lock_guard lock(mu_);
  alive();
  HostTimer ht(timing_, counters_.host_alloc_ns);
  const std::size_t n = tag.bytes();
  std::unique_ptr<Buf> b = acquire(n);
  const SlotId id = new_slot_id();
  slots_.emplace(id, Slot{std::move(b), n, tag, 1});
  bytes_ += n;
  peak_ = std::max(peak_, bytes_);
  return id;
}

void VulkanBackend::incref(SlotId id) {
  std::lock_guard lock(mu_);
  if (!ctx_) return;
  get(id).refs++;
}

void VulkanBackend::decref(SlotId id) {
  std::lock_guard lock(mu_);
  if (!ctx_) return;  // after shutdown
  HostTimer ht(timing_, counters_.host_alloc_ns);
  Slot& s = get(id);
  if (--s.refs > 0) return;
  bytes_ -= s.bytes;
  std::unique_ptr<Buf> b = std::move(s.buf);
  slots_.erase(id);
  used_.erase(id);
  if (current_ && current_->commands > 0)
    current_->released.push_back(std::move(b));
  else if (!inflight_.empty())
    inflight_.back()->released.push_back(std::move(b));
  else
    give_back(std::move(b));
}

void VulkanBackend::write(SlotId id, std::span<const std::byte> src) {
  std::lock_guard lock(mu_);
  alive();
  Slot& s = get(id);
  if (src.size() > s.bytes)
    throw BackendError(fmt::format("vulkan: write of {} bytes into a {}-byte slot", src.size(), s.bytes));
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

void VulkanBackend::read(SlotId id, std::span<std::byte> dst) {
  std::lock_guard lock(mu_);
  alive();
  Slot& s = get(id);
  if (dst.size() > s.bytes)
    throw BackendError(fmt::format("vulkan: read of {} bytes from a {}-byte slot", dst.size(), s.bytes));
  counters_.bytes_downloaded += dst.size();
  if (dst.empty()) return;
  if (s.buf->mapped && mapped_reads_cached_) {
    if (used_.count(id)) finish();
    std::memcpy(dst.data(), s.buf->mapped, dst.size());
    return;
  }
  if (!readback_ || readback_->capacity < dst.size()) {
    readback_.reset();
    readback_ = create_buffer(size_class(dst.size()), readback_type_, true);
  }
  Batch& b = recording();
  barrier_if({s.buf->buf.get()}, b);
  VkBufferCopy c{0, 0, dst.size()};
  vkCmdCopyBuffer(b.cmd, s.buf->buf.get(), readback_->buf.get(), 1, &c);
  b.commands++;
  finish();  // the copy completes before the host reads (reads are serialized by mu_)
  std::memcpy(dst.data(), readback_->mapped, dst.size());
}

std::size_t VulkanBackend::slot_count() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

std::size_t VulkanBackend::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<SlotInfo> VulkanBackend::live_slots() const {
  std::lock_guard lock(mu_);
  std::vector<SlotInfo> v;
  for (auto& [id, s] : slots_) v.push_back({id, s.bytes, s.tag});
  return v;
}

BackendMemory VulkanBackend::memory() const {
  std::lock_guard lock(mu_);
  BackendMemory m{slots_.size(), bytes_, peak_, pooled_bytes_, 0, 0};
  m.compiled_kernels = kernels_.size() + scans_.size();
  m.pipelines = pipes_ ? pipes_->size() : 0;
  return m;
}

void VulkanBackend::clear_caches() {
  std::lock_guard lock(mu_);
  if (!ctx_) return;
  finish();
  kernels_.clear();
  scans_.clear();
  spirv_.clear();
  sets_.clear();  // their layouts go with the pipelines; nothing recorded refers to them after finish()
  if (set_pool_ && !lost_) check(vkResetDescriptorPool(ctx_->device(), set_pool_.get(), 0), "vkResetDescriptorPool");
  set_pool_full_ = false;
  pipes_->clear();
  for (auto& [cls, v] : free_) v.clear();
  free_.clear();
  readback_.reset();
  pooled_bytes_ = 0;
}

std::shared_ptr<Executable> VulkanBackend::prepare(const Op& op) {
  std::lock_guard lock(mu_);
  alive();
  switch (prim_kind(op.prim)) {
    case PrimKind::routine:
    case PrimKind::movement:
    case PrimKind::reduce: break;
    default: return nullptr;
  }
  if (is_linalg(op.prim)) {
    // a batch: one shader, an invocation per matrix (failures are NaN/inf, as on JAX's GPU); a
    // single matrix, or a dtype the device cannot hold: the oracle's routine on the host (its errors)
    if (linalg_matrices(op) >= 2 && (ctx_->desc().float64 || op.in[0].dtype != DType::float64))
      if (auto sh = render_linalg_routine(op, ctx_->desc().float64, max_buffers_))
        return make_kernel_exe(*sh, fmt::format("{}|{}", prim_name(op.prim), sh->glsl));
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

std::shared_ptr<Executable> VulkanBackend::prepare_kernel(const Kernel& k) {
  std::lock_guard lock(mu_);
  alive();
  const std::string key = k.key();
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  auto exe = make_kernel_exe(render_kernel(k, ctx_->desc().float64), key);
  trim_unused(kernels_);
  kernels_[key] = exe;
  return exe;
}

void VulkanBackend::dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) {
  std::lock_guard lock(mu_);
  alive();
  HostTimer ht(timing_, counters_.host_dispatch_ns);
  if (auto* hr = dynamic_cast<HostRoutineExe*>(&exe)) return host_routine(*hr, in, out);
  if (auto* sc = dynamic_cast<ScanExe*>(&exe)) return run_scan(*sc, in, out);
  if (auto* pe = dynamic_cast<PreencodedExe*>(&exe)) return run_preencoded(*pe, in, out);
  if (auto* as = dynamic_cast<AssocExe*>(&exe)) return run_assoc(*as, in, out);
  auto& k = static_cast<KernelExe&>(exe);
  if (k.invocations == 0) return;
  std::vector<VkBuffer> reads, writes;
  std::vector<const Buf*> bound;
  for (auto id : in) bound.push_back(get(id).buf.get());
  for (auto id : out) bound.push_back(get(id).buf.get());
  for (std::size_t i = 0; i < bound.size(); ++i) (i < in.size() ? reads : writes).push_back(bound[i]->buf.get());
  Batch& b = batch_with_room(1, static_cast<std::uint32_t>(reads.size() + writes.size()) + 1);
  bind_scratch(b, k, writes);
  if (k.scratch) bound.push_back(k.scratch.get());
  VkDescriptorSet set = cached_set(b, *k.pipe, bound);
  const int nbufs = static_cast<int>(bound.size());
  barrier_for(reads, writes, b);
  record_dispatch(b, *k.pipe, set, k.invocations, nbufs);
  touch(in, out);
}

void VulkanBackend::flush() {
  std::lock_guard lock(mu_);
  if (ctx_ && !lost_ && current_ && current_->commands) submit();
}

void VulkanBackend::synchronize() {
  std::lock_guard lock(mu_);
  if (ctx_) finish();
}

vulkan::Counters VulkanBackend::counters() const {
  std::lock_guard lock(mu_);
  vulkan::Counters c = counters_;
  c.pipeline_creations = pipes_ ? pipes_->creations() - creations_base_ : 0;
  return c;
}

void VulkanBackend::reset_counters() {
  std::lock_guard lock(mu_);
  counters_ = {};
  creations_base_ = pipes_ ? pipes_->creations() : 0;
}

void VulkanBackend::shutdown(bool at_exit) {
  if (at_exit) mark_process_exiting();
  std::lock_guard lock(mu_);
  if (!ctx_) return;
  if (!at_exit) {
    try {
      finish();
    } catch (const Error&) {}
    vkDeviceWaitIdle(ctx_->device());
  }
  current_.reset();
  inflight_.clear();
  spare_.clear();
  sets_.clear();
  set_pool_ = {};
  slots_.clear();
  readback_.reset();
  free_.clear();
  kernels_.clear();
  scans_.clear();
  spirv_.clear();
  pipes_->release_all();
  pipes_.reset();
  ctx_.reset();  // the last reference: the device and the instance go (unless at_exit)
  info_.available = false;
  info_.reason =
      at_exit ? "the vulkan backend was shut down (process exit)" : "the vulkan backend was shut down (jx::shutdown)";
  g_instance = nullptr;
}

void VulkanBackend::alive() const {
  if (!ctx_ || lost_) throw BackendError(fmt::format("vulkan: backend unavailable: {}", info_.reason));
}

void VulkanBackend::device_lost(const char* what) {
  lost_ = true;
  info_.available = false;
  info_.reason =
      fmt::format("the device was lost (VK_ERROR_DEVICE_LOST from {}); restart the process to use vulkan again", what);
  throw BackendError(fmt::format(
      "vulkan: device lost: {} failed with VK_ERROR_DEVICE_LOST; the vulkan backend is unavailable for the rest "
      "of this process (arrays on it can only be disposed; other backends are unaffected)",
      what));
}

VulkanBackend::Slot& VulkanBackend::get(SlotId id) {
  auto it = slots_.find(id);
  if (it == slots_.end()) throw BackendError(fmt::format("vulkan: slot {} does not exist (already freed)", id));
  return it->second;
}

void VulkanBackend::choose_memory() {
  const auto& mp = ctx_->memory_properties();
  const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int dl = -1, mapped = -1, staging = -1, cached = -1;
  for (std::uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const auto f = mp.memoryTypes[i].propertyFlags;
    const auto heap = mp.memoryHeaps[mp.memoryTypes[i].heapIndex].size;
    if ((f & want) == want && heap >= (std::uint64_t{1} << 30) && mapped < 0) mapped = static_cast<int>(i);
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dl < 0) dl = static_cast<int>(i);
    if ((f & host) == host && staging < 0) staging = static_cast<int>(i);
    if ((f & (host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) == (host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT) && cached < 0)
      cached = static_cast<int>(i);
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
  // pooled free buffers: 1/16 of a GPU's heap (at least 256 MiB); 256 MiB where device memory
  // is the process's own (llvmpipe), so RSS stays bounded by what programs hold
  if (!llvmpipe())
    pool_budget_ = std::max<std::size_t>(
        pool_budget_, static_cast<std::size_t>(mp.memoryHeaps[mp.memoryTypes[mem_type_].heapIndex].size / 16));
  readback_type_ = static_cast<std::uint32_t>(cached >= 0 ? cached : staging);
  mapped_reads_cached_ =
      (mp.memoryTypes[mem_type_].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0 || cached < 0;
  // test switch: the staged read path on a device whose memory is all host-cached (lavapipe)
  if (const char* e = std::getenv("JX_VULKAN_STAGED_READS"); e && *e && std::string(e) != "0")
    mapped_reads_cached_ = false;
}

std::unique_ptr<Buf> VulkanBackend::create_buffer(std::size_t bytes, std::uint32_t type, bool map_it) {
  VkDevice d = ctx_->device();
  auto b = std::make_unique<Buf>();
  b->capacity = bytes;
  b->id = ++next_buf_id_;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buf = VK_NULL_HANDLE;
  check(vkCreateBuffer(d, &bi, nullptr, &buf), "vkCreateBuffer");
  b->buf = BufferH(d, buf);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, buf, &req);
  if (!(req.memoryTypeBits & (1u << type)))
    throw BackendError("vulkan: the chosen memory type cannot back storage buffers");
  VkMemoryAllocateInfo mi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mi.allocationSize = req.size;
  mi.memoryTypeIndex = type;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  // an injected out-of-memory fault fails this allocation, retry included
  const bool injected = faults::fire("vk_out_of_device_memory");
  VkResult r = injected ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d, &mi, nullptr, &mem);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {  // give the pool back and retry once
    trim_pool();
    if (!injected) r = vkAllocateMemory(d, &mi, nullptr, &mem);
  }
  if (r == VK_ERROR_DEVICE_LOST) device_lost("vkAllocateMemory");
  if (r != VK_SUCCESS)
    throw BackendError(fmt::format("vulkan: out of device memory allocating {} bytes ({}; {} bytes live)", bytes,
                                   result_name(r), bytes_));
  b->mem = MemoryH(d, mem);
  check(vkBindBufferMemory(d, buf, mem, 0), "vkBindBufferMemory");
  if (map_it || (type == mem_type_ && host_visible_))
    check(vkMapMemory(d, mem, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
  return b;
}

// Over the budget, free pooled buffers from the largest size class down until this one fits
// (clearing the whole pool instead made programs whose live set exceeds the budget allocate
// afresh at every step: the H100 gradient at N = 102400 spent 0.65 s per call in vkAllocateMemory).
void VulkanBackend::give_back(std::unique_ptr<Buf> b) {
  while (pooled_bytes_ + b->capacity > pool_budget_ && !free_.empty()) {
    auto last = std::prev(free_.end());
    auto newest = std::prev(last->second.end());
    pooled_bytes_ -= newest->second->capacity;
    last->second.erase(newest);
    if (last->second.empty()) free_.erase(last);
  }
  if (b->capacity > pool_budget_) return;
  pooled_bytes_ += b->capacity;
  const std::uint64_t id = b->id;
  free_[b->capacity].emplace(id, std::move(b));
}

void VulkanBackend::trim_pool() {
  free_.clear();
  pooled_bytes_ = 0;
}

std::shared_ptr<KernelExe> VulkanBackend::make_kernel_exe(const Shader& sh, const std::string& key,
                                                          std::uint32_t push_bytes) {
  if (sh.buffers > max_buffers_)
    throw BackendError(
        profile_ == "webgpu"
            ? fmt::format("Too many buffers ({}) for WebGPU pipeline (max: {})", sh.buffers, max_buffers_)
            : fmt::format("Too many buffers ({}) for the device's pipeline (max: {})", sh.buffers, max_buffers_));
  // llvmpipe ends every shader loop after 65535 iterations in total (its loop limiter): refuse
  // rather than return a truncated reduction.
  if (sh.max_loop > 65535 && llvmpipe())
    throw BackendError(
        fmt::format("vulkan: {} loops {} times per invocation, but {} stops shader loops after 65535 iterations "
                    "(reductions over more than 65535 elements per output need a GPU driver)",
                    sh.name, sh.max_loop, ctx_->desc().name));
  if (sh.float64 && !ctx_->desc().float64)
    throw BackendError(fmt::format("vulkan: {} needs float64 but {} has no shaderFloat64", sh.name, ctx_->desc().name));
  auto exe = std::make_shared<KernelExe>();
  auto it = spirv_.find(key);
  if (it == spirv_.end()) {
    dump_source(sh.glsl, "glsl");
    const auto t0 = std::chrono::steady_clock::now();
    auto spirv = compile_glsl(sh.glsl, sh.name);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    trace::emit({trace::EventKind::compile, "vulkan", "glslang", 0, false, ms, sh.name});
    debug_log(2, fmt::format("vulkan GLSL for {}:\n{}", sh.name, sh.glsl));
    if (spirv_.size() >= kUnusedKernelLimit) spirv_.clear();  // compiled SPIR-V: a bounded memo
    it = spirv_.emplace(key, std::move(spirv)).first;
  }
  exe->pipe = pipes_->get(it->second, sh.buffers, sh.name, push_bytes);
  exe->invocations = sh.invocations;
  exe->buffers = sh.buffers;
  if (sh.scratch_bytes) {  // zeroed once here; every dispatch leaves it zeroed
    exe->scratch = acquire(sh.scratch_bytes);
    Batch& b = recording();
    barrier_for({}, {exe->scratch->buf.get()}, b);
    vkCmdFillBuffer(b.cmd, exe->scratch->buf.get(), 0, VK_WHOLE_SIZE, 0);
    b.commands++;
    b.held.push_back(exe->scratch);  // the fill may run after the executable is gone
  }
  return exe;
}

std::unique_ptr<Buf> VulkanBackend::acquire(std::size_t n) {
  const std::size_t cls = size_class(n);
  if (auto it = free_.find(cls); it != free_.end()) {  // a listed class holds a buffer
    auto oldest = it->second.begin();
    std::unique_ptr<Buf> b = std::move(oldest->second);
    it->second.erase(oldest);
    if (it->second.empty()) free_.erase(it);  // give_back trims from the last class, which must hold one
    pooled_bytes_ -= cls;
    return b;
  }
  return create_buffer(cls, mem_type_);
}

void VulkanBackend::host_routine(HostRoutineExe& r, std::span<const SlotId> in, std::span<const SlotId> out) {
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

VulkanBackend* instance() {
  Backend& b = backend("vulkan");  // throws BackendError with the reason when unavailable
  return static_cast<VulkanBackend*>(&b);
}

}  // namespace vk

std::unique_ptr<Backend> make_vulkan_backend() { return std::make_unique<vk::VulkanBackend>(); }

namespace vulkan {

using vk::g_instance;
using vk::instance;

Counters counters() { return instance()->counters(); }
void reset_counters() { instance()->reset_counters(); }
void set_limits(const std::string& profile) { instance()->apply_limits(profile); }
std::string limits() { return instance()->profile(); }
bool checked_shared() { return instance()->checked_shared(); }
void synchronize() {
  if (g_instance) g_instance->synchronize();  // never started or shut down: nothing is pending
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
    out.push_back(fmt::format(
        "{}: {} ({}; driver {}; Vulkan {}.{}; float64 {}; storage buffers/stage {}; invocations/workgroup {}; "
        "shared memory {} B)",
        i, d.name, d.type, d.driver, VK_API_VERSION_MAJOR(d.api), VK_API_VERSION_MINOR(d.api), d.float64 ? "yes" : "no",
        d.max_storage_buffers, d.max_invocations, d.max_shared_bytes));
  }
  return out;
}

}  // namespace vulkan
}  // namespace jx
