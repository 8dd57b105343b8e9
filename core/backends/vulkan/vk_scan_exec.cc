// Scans on the vulkan backend: the planner (fused loop shader, else preencoded, else the host
// loop) and the executables that run them: packed operands in, loop shader dispatches, packed
// results out; Kogge-Stone rounds for associative scans.
#include "core/backends/vulkan/vulkan_backend_impl.h"

namespace jx::vk {

ScanPlan VulkanBackend::plan_scan(const ScanProgram& sp, const Target& t) {
  std::lock_guard lock(mu_);
  alive();
  const bool no_wg = t.policy.no_workgroup_scan_fusion;
  const ScanLimits lim = scan_limits();
  const std::string key = fmt::format("{}|{}|{}|{}", sp.key(), profile_, no_wg, lim.series);
  if (auto it = scans_.find(key); it != scans_.end()) return it->second;
  std::string not_fused;
  auto plan = render_fused_scan(sp, lim, not_fused);
  if (no_wg && (!plan || plan->one_workgroup)) {  // replay: the JS runtime's host loop, one step at a time
    return remember_scan(key, {ScanPath::fallback,
                               fmt::format("replay no_workgroup_scan_fusion: {}",
                                           plan ? "the body has dependencies between its kernels" : not_fused),
                               nullptr});
  }
  std::shared_ptr<Pipeline> loop_pipe;
  if (plan) try {
      loop_pipe = make_kernel_exe(plan->sh, "scan|" + plan->sh.glsl, 8)->pipe;
    } catch (const PipelineCompileError& e) {  // the next path: preencoded, else the host loop
      not_fused = e.what();
      plan.reset();
    }
  if (plan) {
    auto x = std::make_shared<ScanExe>();
    x->pipe = std::move(loop_pipe);
    x->operands = sp.operands;
    x->results = sp.results;
    x->length = sp.length;
    std::string why = plan->steps_per_dispatch < sp.length
                          ? fmt::format("{}; {} steps per dispatch ({} stops shader loops after 65535 iterations)",
                                        plan->mode, plan->steps_per_dispatch, ctx_->desc().name)
                          : plan->mode;
    x->plan = std::move(*plan);
    return remember_scan(key, {ScanPath::fused, why, x});
  }
  ScanPlan pre = plan_preencoded(sp, not_fused);
  return pre.exe ? remember_scan(key, std::move(pre)) : pre;  // a refusal here is planned again next time
}

// Every step's dispatches recorded into the command buffer, where the body has no nested scan and
// no routine runs on the host: one descriptor set per body step serves every step.
ScanPlan VulkanBackend::plan_preencoded(const ScanProgram& sp, const std::string& not_fused) {
  auto x = std::make_shared<PreencodedExe>();
  x->sp = sp;
  for (const Step& st : sp.body.steps) {
    if (st.kind == Step::Kind::free) continue;
    if (st.kind == Step::Kind::control)
      return {ScanPath::fallback,
              fmt::format("not fused: {}; not preencoded: a nested scan needs its own loop", not_fused), nullptr};
    std::shared_ptr<Executable> e =
        st.kind == Step::Kind::kernel ? prepare_kernel(sp.body.kernels[st.index]) : prepare(sp.body.routines[st.index]);
    if (!e || dynamic_cast<HostRoutineExe*>(e.get()))
      return {ScanPath::fallback,
              fmt::format("not fused: {}; not preencoded: {} runs on the host", not_fused,
                          prim_name(sp.body.routines[st.index].prim)),
              nullptr};
    x->steps.push_back(std::move(e));
  }
  if (x->steps.size() + 8 > kSetsPerBatch)
    return {ScanPath::fallback,
            fmt::format("not fused: {}; not preencoded: {} dispatches per step", not_fused, x->steps.size()), nullptr};
  return {ScanPath::preencoded, fmt::format("not fused: {}; {} dispatches per step", not_fused, x->steps.size()), x};
}

// The blocked scan's dispatches: scans up the strides 1, B, B², ... (B = 256 positions per
// workgroup, fewer for large elements) while more than one position takes part, until a level
// fits one workgroup (B positions, or B·c_top with the top shader); then, top down, a fix-up of
// every level that spanned several workgroups.
// What scan shaders may use under the current limits profile.
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

std::vector<BlockedLevel> blocked_levels(std::int64_t n, std::int64_t c_top, std::int64_t B) {
  std::vector<BlockedLevel> up, out;
  for (std::int64_t s = 1; n / s > 1; s *= B) {
    const std::int64_t count = n / s;
    if (count > B && count <= B * c_top) {
      up.push_back({0, s, true});
      break;
    }
    up.push_back({0, s, false});
    if (count <= B) break;
  }
  out = up;
  for (std::size_t i = up.size(); i-- > 0;)  // levels that took more than one workgroup
    if (!up[i].top && n / up[i].s > B) out.push_back({1, up[i].s, false});
  return out;
}

ScanPlan VulkanBackend::plan_associative_scan(const AssocProgram& ap, const Target&) {
  std::lock_guard lock(mu_);
  alive();
  const std::string key = fmt::format("{}|{}|{}|{}", ap.key(), profile_, assoc_overrides(), series_scans());
  if (auto it = scans_.find(key); it != scans_.end()) return it->second;
  const ScanLimits lim = scan_limits();
  std::string why;
  auto plan = render_assoc_scan(ap, lim, why);
  if (!plan) return {ScanPath::fallback, why, nullptr};
  auto x = std::make_shared<AssocExe>();
  x->operands = ap.operands;
  x->num_consts = ap.num_consts;
  x->length = ap.operands[ap.num_consts].shape[ap.axis];
  x->plan = std::move(*plan);
  // the Kogge-Stone shader is compiled only where the blocked form cannot run (each compile
  // costs 0.1-3 s on llvmpipe); a shader the driver cannot build leaves the odd/even recursion
  try {
    if (x->plan.blocked)
      x->blocked = make_kernel_exe(*x->plan.blocked, "assoc-blocked|" + x->plan.blocked->glsl, 8)->pipe;
    else if (x->plan.coop)
      x->coop = make_kernel_exe(x->plan.coop->sh, "assoc-coop|" + x->plan.coop->sh.glsl, 8)->pipe;
    else
      x->pipe = make_kernel_exe(x->plan.sh, "assoc|" + x->plan.sh.glsl, 4)->pipe;
  } catch (const PipelineCompileError& e) {
    return {ScanPath::fallback, e.what(), nullptr};
  }
  if (x->coop) {
    x->levels = blocked_levels(x->length, 1, x->plan.coop->chunk);
    return remember_scan(key, {ScanPath::fused,
                               fmt::format("{} dispatches, {} (then fix-ups); leaves packed into one buffer",
                                           x->levels.size(), x->plan.coop->mode),
                               x});
  }
  int rounds = 0;
  for (std::int64_t dd = 1; dd < x->length; dd *= 2) ++rounds;
  if (x->plan.blocked_top) try {
      x->top = make_kernel_exe(*x->plan.blocked_top, "assoc-top|" + x->plan.blocked_top->glsl, 8)->pipe;
    } catch (const PipelineCompileError&) {  // the top level then runs one position per invocation
      x->top = nullptr;
    }
  const std::int64_t c_top = x->top ? x->plan.top_per_invocation : 1;
  if (x->blocked) x->levels = blocked_levels(x->length, c_top, x->plan.block);
  const std::string series =
      x->plan.series ? fmt::format("per series ({} series, the unbatched combine): ", x->plan.series) : "";
  why = x->blocked
            ? series +
                  fmt::format(
                      "blocked: {} dispatches (each workgroup scans {} positions in its memory, the top level {} per "
                      "invocation, then fix-ups; "
                      "leaves {})",
                      x->levels.size(), x->plan.block, c_top,
                      x->plan.direct ? "bound directly" : "packed into one buffer")
            : fmt::format("Kogge-Stone: {} rounds of one shader (one invocation per position, every leaf at once)",
                          rounds);
  return remember_scan(key, {ScanPath::fused, why, x});
}

void VulkanBackend::run_scan(ScanExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
  const ScanShader& p = x.plan;
  Batch& b = batch_with_room(1, 2);
  std::unique_ptr<Buf> gin = acquire(static_cast<std::size_t>(p.in_size) * 4),
                       gout = acquire(static_cast<std::size_t>(p.out_size) * 4);
  std::vector<Region> pack;
  for (std::size_t i = 0; i < in.size(); ++i)
    pack.push_back({get(in[i]).buf->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.in_words[i]) * 4,
                    x.operands[i].bytes()});
  copy_disjoint(b, pack);
  VkDescriptorSet set = bind_set(b, *x.pipe, {gin->buf.get(), gout->buf.get()});
  // a length-0 scan still runs once over no steps: it moves the init carries to the results
  for (std::int64_t it0 = 0; it0 < std::max<std::int64_t>(x.length, 1); it0 += p.steps_per_dispatch) {
    barrier_for({gin->buf.get(), gout->buf.get()}, {gout->buf.get()}, b);
    const std::int32_t range[2] = {static_cast<std::int32_t>(it0),
                                   static_cast<std::int32_t>(std::min(x.length, it0 + p.steps_per_dispatch))};
    vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(range), range);
    record_dispatch(b, *x.pipe, set, p.sh.invocations, 2, p.workgroup);
  }
  std::vector<Region> unpack;
  for (std::size_t r = 0; r < out.size(); ++r)
    unpack.push_back({gout->buf.get(), static_cast<std::size_t>(p.out_words[r]) * 4, get(out[r]).buf->buf.get(), 0,
                      x.results[r].bytes()});
  copy_disjoint(b, unpack);
  b.released.push_back(std::move(gin));
  b.released.push_back(std::move(gout));
  touch(in, out);
}

void VulkanBackend::run_assoc(AssocExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
  const AssocShader& p = x.plan;
  const std::size_t nc = static_cast<std::size_t>(x.num_consts), k = out.size();
  const bool direct = x.blocked && p.direct;
  Batch& b = batch_with_room(3, static_cast<std::uint32_t>(2 * (2 * k + 1)) + 4);
  // constants packed into gin; leaves packed into q[0] (the result ends in q[cur]), or (direct)
  // read from the inputs by the first level and scanned in place in the outputs
  std::unique_ptr<Buf> gin = acquire(static_cast<std::size_t>(p.const_size) * 4);
  std::unique_ptr<Buf> q[2];
  if (!direct) {
    q[0] = acquire(static_cast<std::size_t>(p.leaf_size) * 4);
    if (!x.blocked && !x.coop) q[1] = acquire(static_cast<std::size_t>(p.leaf_size) * 4);
  }
  std::vector<Region> pack;
  for (std::size_t i = 0; i < nc; ++i)
    pack.push_back({get(in[i]).buf->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.const_words[i]) * 4,
                    x.operands[i].bytes()});
  if (!direct)
    for (std::size_t l = 0; l < k; ++l)
      pack.push_back({get(in[nc + l]).buf->buf.get(), 0, q[0]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4,
                      x.operands[nc + l].bytes()});
  copy_disjoint(b, pack);
  int cur = 0;
  if (x.coop) {
    record_coop(x, b, gin->buf.get(), q[0]->buf.get());
  } else if (x.blocked) {
    std::vector<VkBuffer> bufs{gin->buf.get()}, reads{gin->buf.get()}, writes;
    if (direct) {
      for (std::size_t l = 0; l < k; ++l) bufs.push_back(get(in[nc + l]).buf->buf.get());
      for (std::size_t l = 0; l < k; ++l) bufs.push_back(get(out[l]).buf->buf.get());
      reads.insert(reads.end(), bufs.begin() + 1, bufs.end());
      writes.assign(bufs.begin() + 1 + static_cast<std::ptrdiff_t>(k), bufs.end());
    } else {
      bufs.push_back(q[0]->buf.get());
      reads.push_back(q[0]->buf.get());
      writes.push_back(q[0]->buf.get());
    }
    const std::int64_t c_top = x.top ? p.top_per_invocation : 1;
    VkDescriptorSet set = bind_set(b, *x.blocked, bufs);
    VkDescriptorSet top_set = x.top ? bind_set(b, *x.top, bufs) : VK_NULL_HANDLE;
    const auto& levels = x.levels;
    if (direct && levels.empty()) {  // one position (or none): the outputs are the inputs
      std::vector<Region> same;
      for (std::size_t l = 0; l < k; ++l)
        same.push_back({get(in[nc + l]).buf->buf.get(), 0, get(out[l]).buf->buf.get(), 0, x.operands[nc + l].bytes()});
      copy_disjoint(b, same);
    }
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const BlockedLevel& lv = levels[i];
      const Pipeline& pipe = lv.top ? *x.top : *x.blocked;
      const std::int64_t C = lv.top ? c_top : 1;
      barrier_for(reads, writes, b);
      const std::int32_t pc[2] = {direct && i == 0 ? 2 : lv.mode, static_cast<std::int32_t>(lv.s)};
      vkCmdPushConstants(b.cmd, pipe.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
      record_dispatch(b, pipe, lv.top ? top_set : set, (x.length / lv.s + C - 1) / C, static_cast<int>(bufs.size()),
                      p.block, static_cast<std::uint32_t>(std::max<std::int64_t>(p.series, 1)));
    }
  } else {  // Kogge-Stone rounds, ping-pong between q[0] and q[1]
    VkDescriptorSet sets[2] = {bind_set(b, *x.pipe, {gin->buf.get(), q[0]->buf.get(), q[1]->buf.get()}),
                               bind_set(b, *x.pipe, {gin->buf.get(), q[1]->buf.get(), q[0]->buf.get()})};
    for (std::int64_t d = 1; d < x.length; d *= 2, cur ^= 1) {
      barrier_for({gin->buf.get(), q[cur]->buf.get()}, {q[cur ^ 1]->buf.get()}, b);
      const std::int32_t dd = static_cast<std::int32_t>(d);
      vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(dd), &dd);
      record_dispatch(b, *x.pipe, sets[cur], p.sh.invocations, 3);
    }
  }
  if (!direct) {
    std::vector<Region> unpack;
    for (std::size_t l = 0; l < k; ++l)
      unpack.push_back({q[cur]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4, get(out[l]).buf->buf.get(), 0,
                        x.operands[nc + l].bytes()});
    copy_disjoint(b, unpack);
  }
  b.released.push_back(std::move(gin));
  for (auto& buf : q)
    if (buf) b.released.push_back(std::move(buf));
  touch(in, out);
}

void VulkanBackend::record_coop(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer leaves) {
  const AssocShader::Coop& c = *x.plan.coop;
  std::unique_ptr<Buf> scratch;
  std::vector<VkBuffer> bufs{gin, leaves}, writes{leaves};
  if (c.scratch_words) {
    scratch = acquire(static_cast<std::size_t>(c.max_groups * c.scratch_words) * 4);
    bufs.push_back(scratch->buf.get());
    writes.push_back(scratch->buf.get());
  }
  VkDescriptorSet set = bind_set(b, *x.coop, bufs);
  for (const BlockedLevel& lv : x.levels) {
    barrier_for(bufs, writes, b);
    const std::int32_t pc[2] = {lv.mode, static_cast<std::int32_t>(lv.s)};
    vkCmdPushConstants(b.cmd, x.coop->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
    const std::int64_t count = x.length / lv.s, items = lv.mode == 0 ? (count + c.chunk - 1) / c.chunk : count;
    record_dispatch(b, *x.coop, set, std::min(items, c.max_groups) * c.wg, static_cast<int>(bufs.size()), c.wg);
  }
  if (scratch) b.released.push_back(std::move(scratch));
}

void VulkanBackend::run_preencoded(PreencodedExe& x, std::span<const SlotId> in, std::span<const SlotId> out) {
  const ScanProgram& sp = x.sp;
  const Program& body = sp.body;
  const int nc = sp.num_consts, nk = sp.num_carry, nin = body.num_inputs;
  const std::size_t ny = body.outputs.size() - nk;
  Batch* bp =
      &batch_with_room(static_cast<std::uint32_t>(x.steps.size()), static_cast<std::uint32_t>(x.steps.size()) * 9);
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
    bind_scratch(b, static_cast<KernelExe&>(*x.steps[i]), bs);
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
      if (k.scratch) writes.push_back(k.scratch->buf.get());
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

}  // namespace jx::vk
