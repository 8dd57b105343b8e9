// The vulkan backend (vulkan_backend_impl.h): slots, kernel and routine executables, dispatch,
// the limits profile, counters, shutdown, and the public vulkan:: API. Its parts: BufferPool
// (vk_buffers.cc), Recorder and DescriptorCache (vk_recorder.cc, vk_timing.cc), ScanRunner
// (vk_scan_exec.cc).
#include "core/base/env.h"
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
  const bool validation = env_is_on("JX_VULKAN_VALIDATION");
  try {
    ctx_ = std::make_shared<Context>(validation);
    pipes_ = std::make_unique<Pipelines>(ctx_);
    const auto& d = ctx_->desc();
    info_.device = fmt::format("{} ({}, {}){}", d.name, d.type, d.driver, validation ? " [validation]" : "");
    info_.available = true;
    buffers_ = std::make_unique<BufferPool>(ctx_, health_, llvmpipe());
    rec_ = std::make_unique<Recorder>(ctx_, health_, *buffers_, counters_);
    scans_ = std::make_unique<ScanRunner>(*this, *rec_, *buffers_, d.name);
    const char* lim = std::getenv("JX_LIMITS");
    apply_limits(lim && *lim ? lim : "webgpu");
    rec_->set_timing(env_is_on("JX_VK_TIMING"));
    if (const char* every = std::getenv("JX_VK_SUBMIT_EVERY"); every && *every)
      rec_->set_submit_every(parse_submit_every(every));
    checked_shared_ = llvmpipe();
    set_unroll_loops(!llvmpipe());
    set_tile_floor(env_int("JX_VK_TILE_FLOOR", llvmpipe() ? 0 : std::int64_t{1} << 18));
    if (const char* un = std::getenv("JX_VK_UNROLL"); un && *un) set_unroll_loops(parse_switch("JX_VK_UNROLL", un));
    if (const char* chk = std::getenv("JX_VK_CHECK_SHARED"); chk && *chk)
      checked_shared_ = parse_switch("JX_VK_CHECK_SHARED", chk);
    g_instance = this;
    std::atexit([] {
      if (g_instance) g_instance->shutdown(true);
    });
  } catch (const Error& e) {
    scans_.reset();
    rec_.reset();
    buffers_.reset();
    pipes_.reset();
    ctx_.reset();
    info_.available = false;
    info_.reason = e.what();
  }
}

const DeviceInfo& VulkanBackend::info() const {
  if (health_.lost && info_.available) {
    info_.available = false;
    info_.reason = health_.reason;
  }
  return info_;
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
  info_.limits.f32_sum_max_terms = vk::short_f32_sums() ? kShortF32Sum : 0;
  info_.limits.scan_leaf_kernels = true;
}

SlotId VulkanBackend::malloc(const AVal& tag) {
  std::lock_guard lock(mu_);
  alive();
  HostTimer ht(rec_->timing(), counters_.host_alloc_ns);
  const std::size_t n = tag.bytes();
  bool reused = false;  // stream-ordered reuse (Recorder::release), else a new buffer
  std::unique_ptr<Buf> b = rec_->take_reusable(n, &reused);
  if (!b) b = buffers_->acquire(n, bytes_);
  const std::uint64_t reused_until = reused ? rec_->waits() + 1 : 0;
  const SlotId id = new_slot_id();
  slots_.emplace(id, Slot{std::move(b), n, tag, 1, reused_until});
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
  HostTimer ht(rec_->timing(), counters_.host_alloc_ns);
  Slot& s = get(id);
  if (--s.refs > 0) return;
  bytes_ -= s.bytes;
  std::unique_ptr<Buf> b = std::move(s.buf);
  slots_.erase(id);
  rec_->release(std::move(b));
}

void VulkanBackend::write(SlotId id, std::span<const std::byte> src) {
  std::lock_guard lock(mu_);
  alive();
  Slot& s = get(id);
  if (src.size() > s.bytes)
    throw BackendError(fmt::format("vulkan: write of {} bytes into a {}-byte slot", src.size(), s.bytes));
  counters_.bytes_uploaded += src.size();
  if (src.empty()) return;
  if (s.buf->mapped && in_use_elsewhere(s) && !pending(s)) {  // a fresh buffer, not a host wait
    rec_->release(std::move(s.buf));
    s.buf = buffers_->acquire(s.bytes, bytes_);
    s.reused_until = 0;
  }
  if (s.buf->mapped) {
    if (pending(s)) rec_->finish();
    std::memcpy(s.buf->mapped, src.data(), src.size());
    return;
  }
  auto st = buffers_->staging(src.size(), bytes_);
  std::memcpy(st->mapped, src.data(), src.size());
  rec_->upload(std::move(st), s.buf->buf.get(), src.size());
  mark_used(s);
}

void VulkanBackend::read(SlotId id, std::span<std::byte> dst) {
  std::lock_guard lock(mu_);
  alive();
  Slot& s = get(id);
  if (dst.size() > s.bytes)
    throw BackendError(fmt::format("vulkan: read of {} bytes from a {}-byte slot", dst.size(), s.bytes));
  counters_.bytes_downloaded += dst.size();
  if (dst.empty()) return;
  if (s.buf->mapped && buffers_->mapped_reads()) {
    if (pending(s) || in_use_elsewhere(s)) rec_->finish();
    std::memcpy(dst.data(), s.buf->mapped, dst.size());
    return;
  }
  Buf& host = buffers_->readback(dst.size(), bytes_);
  rec_->download(s.buf->buf.get(), host, dst.size());  // reads are serialized by mu_
  std::memcpy(dst.data(), host.mapped, dst.size());
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
  BackendMemory m{slots_.size(), bytes_, peak_, buffers_ ? buffers_->pooled_bytes() : 0, 0, 0};
  m.compiled_kernels = kernels_.size() + (scans_ ? scans_->size() : 0);
  m.pipelines = pipes_ ? pipes_->size() : 0;
  return m;
}

void VulkanBackend::clear_caches() {
  std::lock_guard lock(mu_);
  if (!ctx_) return;
  rec_->finish();
  kernels_.clear();
  scans_->clear();
  spirv_.clear();
  rec_->descriptors().clear(!health_.lost);
  pipes_->clear();
  buffers_->clear();
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
        return kernel_exe(*sh, fmt::format("{}|{}", prim_name(op.prim), sh->glsl));
    auto e = std::make_shared<HostRoutineExe>();
    e->op = op;
    e->host = make_host_op_executable(op);
    return e;
  }
  // a concatenate over the budget goes through the lowering, which splits it into a tree
  if (op.prim == Prim::concatenate && static_cast<int>(op.in.size()) + 1 > max_buffers_) return nullptr;
  auto sh = render_routine(op);
  if (!sh) return nullptr;  // lowered to kernels by the runtime
  return kernel_exe(*sh, fmt::format("{}|{}", prim_name(op.prim), sh->glsl));
}

std::shared_ptr<Executable> VulkanBackend::prepare_kernel(const Kernel& k) {
  std::lock_guard lock(mu_);
  alive();
  return cached_kernel(k.key(), [&] { return render_kernel(k, ctx_->desc().float64); });
}

std::shared_ptr<Executable> VulkanBackend::prepare_kernel_group(const std::vector<GroupMember>& members,
                                                                const std::vector<AVal>& inputs) {
  std::lock_guard lock(mu_);
  alive();
  std::vector<GroupedKernel> ms;
  std::string key = "group";
  for (const GroupMember& m : members) {
    ms.push_back({m.kernel, m.binds});
    key += fmt::format("|{}|{}", m.kernel->key(), fmt::join(m.binds, ","));
  }
  return cached_kernel(key, [&] { return render_kernel_group(ms, inputs, ctx_->desc().float64); });
}

ScanPlan VulkanBackend::plan_scan(const ScanProgram& sp, const Target& t) {
  std::lock_guard lock(mu_);
  alive();
  return scans_->plan_scan(sp, t, scan_limits(), profile_);
}

ScanPlan VulkanBackend::plan_associative_scan(const AssocProgram& ap, const Target&) {
  std::lock_guard lock(mu_);
  alive();
  return scans_->plan_associative_scan(ap, scan_limits(), profile_);
}

ScanLimits VulkanBackend::scan_limits() const {
  const auto& d = ctx_->desc();
  return {d.float64,
          profile_ == "webgpu" ? std::int64_t{16384} : static_cast<std::int64_t>(d.max_shared_bytes),
          llvmpipe() ? std::int64_t{65535} : std::int64_t{0},
          max_buffers_,
          checked_shared_,
          llvmpipe(),
          series_scans()};
}

void VulkanBackend::dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) {
  std::lock_guard lock(mu_);
  alive();
  HostTimer ht(rec_->timing(), counters_.host_dispatch_ns);
  if (auto* k = dynamic_cast<KernelExe*>(&exe)) return run_kernel(*k, in, out);  // most dispatches
  if (auto* hr = dynamic_cast<HostRoutineExe*>(&exe)) return host_routine(*hr, in, out);
  if (ScanRunner::runs(exe)) {
    std::vector<Buf*> ib, ob;
    for (auto id : in) ib.push_back(get(id).buf.get());
    for (auto id : out) ob.push_back(get(id).buf.get());
    scans_->run(exe, ib, ob, bytes_);
    for (auto id : in) mark_used(get(id));  // after recording: a host wait there would have cleared it
    for (auto id : out) mark_used(get(id));
    return;
  }
  throw BackendError("vulkan: dispatch of an executable another backend prepared");
}

void VulkanBackend::run_kernel(KernelExe& k, std::span<const SlotId> in, std::span<const SlotId> out) {
  if (k.invocations == 0) return;
  // the members' capacity is reused: a dispatch allocates nothing here (the lock is held)
  std::vector<VkBuffer>&reads = kernel_reads_, &writes = kernel_writes_;
  std::vector<const Buf*>& bound = kernel_bound_;
  reads.clear();
  writes.clear();
  bound.clear();
  std::vector<Slot*>& slots = kernel_slots_;
  slots.clear();
  for (auto id : in) slots.push_back(&get(id));
  for (auto id : out) slots.push_back(&get(id));
  for (Slot* x : slots) bound.push_back(x->buf.get());
  for (std::size_t i = 0; i < bound.size(); ++i) (i < in.size() ? reads : writes).push_back(bound[i]->buf.get());
  Batch& b = rec_->batch_with_room(1, static_cast<std::uint32_t>(reads.size() + writes.size()) + 1);
  bind_scratch(b, k, writes);
  if (k.scratch) bound.push_back(k.scratch.get());
  VkDescriptorSet set = rec_->cached_set(b, *k.pipe, bound);
  const int nbufs = static_cast<int>(bound.size());
  rec_->barrier_for(reads, writes, b);
  rec_->record_dispatch(b, *k.pipe, set, k.invocations, nbufs);
  for (Slot* x : slots) mark_used(*x);  // a host access waits for this dispatch
}

void VulkanBackend::flush() {
  std::lock_guard lock(mu_);
  if (ctx_) rec_->flush();
}

void VulkanBackend::synchronize() {
  std::lock_guard lock(mu_);
  if (ctx_) rec_->finish();
}

vulkan::Counters VulkanBackend::counters() const {
  std::lock_guard lock(mu_);
  vulkan::Counters c = counters_;
  c.pipeline_creations = pipes_ ? pipes_->creations() - creations_base_ : 0;
  c.buffers_created = buffers_ ? buffers_->created() - buffers_base_ : 0;
  return c;
}

void VulkanBackend::reset_counters() {
  std::lock_guard lock(mu_);
  counters_ = {};
  creations_base_ = pipes_ ? pipes_->creations() : 0;
  buffers_base_ = buffers_ ? buffers_->created() : 0;
}

void VulkanBackend::set_timing(bool on) {
  std::lock_guard lock(mu_);
  rec_->set_timing(on);
}

std::vector<vulkan::TimedPipeline> VulkanBackend::timings() const {
  std::lock_guard lock(mu_);
  return rec_->timings();
}

void VulkanBackend::reset_timings() {
  std::lock_guard lock(mu_);
  rec_->reset_timings();
}

void VulkanBackend::shutdown(bool at_exit) {
  if (at_exit) mark_process_exiting();
  std::lock_guard lock(mu_);
  if (!ctx_) return;
  if (!at_exit) {
    try {
      rec_->finish();
    } catch (const Error&) {}
    vkDeviceWaitIdle(ctx_->device());
  }
  scans_.reset();
  rec_.reset();  // batches and descriptor pools
  slots_.clear();
  buffers_.reset();
  kernels_.clear();
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
  if (!ctx_ || health_.lost)
    throw BackendError(fmt::format("vulkan: backend unavailable: {}", health_.lost ? health_.reason : info_.reason));
}

VulkanBackend::Slot& VulkanBackend::get(SlotId id) {
  auto it = slots_.find(id);
  if (it == slots_.end()) throw BackendError(fmt::format("vulkan: slot {} does not exist (already freed)", id));
  return it->second;
}

std::shared_ptr<KernelExe> VulkanBackend::kernel_exe(const Shader& sh, const std::string& key,
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
    exe->scratch = buffers_->acquire(sh.scratch_bytes, bytes_);
    rec_->fill_zero(rec_->recording(), exe->scratch);
  }
  return exe;
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
bool pipeline_statistics() { return instance()->pipeline_stats(); }
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
