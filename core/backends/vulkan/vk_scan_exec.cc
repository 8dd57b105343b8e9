// The vulkan scan runner (vk_scans.h): plans, and the recording of scan executables.
#include "core/backends/vulkan/vk_scans.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/backends/cache_bound.h"

namespace jx::vk {

ScanPlan ScanRunner::plan_scan(const ScanProgram& sp, const Target& t, const ScanLimits& lim,
                               const std::string& profile) {
  const bool no_wg = t.policy.no_workgroup_scan_fusion;
  const std::string key = fmt::format("{}|{}|{}|{}", sp.key(), profile, no_wg, lim.series);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  std::string not_fused;
  auto plan = render_fused_scan(sp, lim, not_fused);
  if (no_wg && (!plan || plan->one_workgroup)) {  // replay: the JS runtime's host loop, one step at a time
    return remember(key, {ScanPath::fallback,
                          fmt::format("replay no_workgroup_scan_fusion: {}",
                                      plan ? "the body has dependencies between its kernels" : not_fused),
                          nullptr});
  }
  std::shared_ptr<Pipeline> loop_pipe;
  if (plan) try {
      loop_pipe = kernels_.kernel_exe(plan->sh, "scan|" + plan->sh.glsl, 8)->pipe;
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
                                        plan->mode, plan->steps_per_dispatch, device_)
                          : plan->mode;
    x->plan = std::move(*plan);
    return remember(key, {ScanPath::fused, why, x});
  }
  ScanPlan pre = plan_preencoded(sp, not_fused);
  return pre.exe ? remember(key, std::move(pre)) : pre;  // a refusal here is planned again next time
}

// Every step's dispatches recorded into the command buffer, where the body has no nested scan and
// no routine runs on the host: one descriptor set per body step serves every step.
ScanPlan ScanRunner::plan_preencoded(const ScanProgram& sp, const std::string& not_fused) {
  auto x = std::make_shared<PreencodedExe>();
  x->sp = sp;
  for (const Step& st : sp.body.steps) {
    if (st.kind == Step::Kind::free) continue;
    if (st.kind == Step::Kind::control)
      return {ScanPath::fallback,
              fmt::format("not fused: {}; not preencoded: a nested scan needs its own loop", not_fused), nullptr};
    std::shared_ptr<Executable> e = st.kind == Step::Kind::kernel ? kernels_.prepare_kernel(sp.body.kernels[st.index])
                                                                  : kernels_.prepare(sp.body.routines[st.index]);
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

std::vector<BlockedLevel> blocked_levels(std::int64_t n, std::int64_t c_top, std::int64_t B, std::int64_t B_top) {
  std::vector<BlockedLevel> up, out;
  if (B_top <= 0) B_top = B;
  for (std::int64_t s = 1; n / s > 1; s *= B) {
    const std::int64_t count = n / s;
    if (count > B && count <= B_top * c_top) {
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

int AssocExe::bound_buffers(int) const {
  const Pipeline* p = blocked ? blocked.get() : coop ? coop.get() : pipe.get();
  return p ? p->buffers : 3;
}

namespace {
// "; leaves 0, 2 computed in the first level from 3 operands" (AssocProgram::leaf_kernels) and
// "; results 1, 3 not stored by the last fix-up" (AssocProgram::unread, where a fix-up runs)
std::string first_and_last(const AssocProgram& ap, const std::vector<BlockedLevel>& levels) {
  std::string s;
  std::vector<int> ls;
  for (const LeafKernel& lk : ap.leaf_kernels) ls.push_back(lk.leaf);
  if (!ls.empty())
    s += fmt::format("; leaves {} computed in the first level from {} operands", fmt::join(ls, ", "), ap.extra.size());
  std::vector<int> unread;
  for (std::size_t l = 0; l < ap.unread.size(); ++l)
    if (ap.unread[l]) unread.push_back(static_cast<int>(l));
  const bool fixup =
      std::any_of(levels.begin(), levels.end(), [](const BlockedLevel& v) { return v.mode == 1 || v.mode == 3; });
  if (!unread.empty() && fixup) s += fmt::format("; results {} not stored by the last fix-up", fmt::join(unread, ", "));
  return s;
}
}  // namespace

ScanPlan ScanRunner::plan_associative_scan(const AssocProgram& ap, const ScanLimits& lim, const std::string& profile) {
  const std::string key = fmt::format("{}|{}|{}|{}", ap.key(), profile, assoc_overrides(), series_scans());
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  std::string why;
  auto plan = render_assoc_scan(ap, lim, why);
  if (!plan) return {ScanPath::fallback, why, nullptr};
  auto x = std::make_shared<AssocExe>();
  x->operands = ap.operands;
  x->num_consts = ap.num_consts;
  x->length = ap.operands[ap.num_consts].shape[ap.axis];
  x->plan = std::move(*plan);
  x->extra = ap.extra.size();
  for (int l = 0; l + ap.num_consts < static_cast<int>(ap.operands.size()); ++l)
    x->computed.push_back(ap.leaf_kernel(l) != nullptr);
  // the Kogge-Stone shader is compiled only where the blocked form cannot run (each compile
  // costs 0.1-3 s on llvmpipe); a shader the driver cannot build leaves the odd/even recursion
  try {
    if (x->plan.blocked)
      x->blocked = kernels_.kernel_exe(*x->plan.blocked, "assoc-blocked|" + x->plan.blocked->glsl, 8)->pipe;
    else if (x->plan.coop)
      x->coop = kernels_.kernel_exe(x->plan.coop->sh, "assoc-coop|" + x->plan.coop->sh.glsl, 8)->pipe;
    else
      x->pipe = kernels_.kernel_exe(x->plan.sh, "assoc|" + x->plan.sh.glsl, 4)->pipe;
  } catch (const PipelineCompileError& e) {
    return {ScanPath::fallback, e.what(), nullptr};
  }
  if (x->coop) {
    x->levels = blocked_levels(x->length, 1, x->plan.coop->chunk);
    return remember(key,
                    {ScanPath::fused,
                     fmt::format("{} dispatches, {} (then fix-ups); leaves {}", x->levels.size(), x->plan.coop->mode,
                                 x->plan.coop->direct ? "bound directly" : "packed into one buffer"),
                     x});
  }
  int rounds = 0;
  for (std::int64_t dd = 1; dd < x->length; dd *= 2) ++rounds;
  if (x->plan.blocked_top) try {
      x->top = kernels_.kernel_exe(*x->plan.blocked_top, "assoc-top|" + x->plan.blocked_top->glsl, 8)->pipe;
    } catch (const PipelineCompileError&) {  // the top level then runs one position per invocation
      x->top = nullptr;
    }
  const std::int64_t c_top = x->top ? x->plan.top_per_invocation : 1;
  if (x->blocked && x->plan.fix_totals > 0)
    x->levels = {{0, 1, false}, {3, 1, false}};
  else if (x->blocked)
    x->levels = blocked_levels(x->length, c_top, x->plan.block, x->top ? x->plan.top_block : x->plan.block);
  const std::string shape = x->plan.fix_totals > 0
                                ? fmt::format("then a fix-up that folds the {} block totals, {} per invocation",
                                              (x->length + x->plan.block - 1) / x->plan.block - 1, x->plan.fix_totals)
                                : fmt::format("the top level {} per invocation{}, then fix-ups", c_top,
                                              x->top && x->plan.top_block != x->plan.block
                                                  ? fmt::format(" in a workgroup of {}", x->plan.top_block)
                                                  : std::string());
  const std::string series =
      x->plan.series ? fmt::format("per series ({} series, the unbatched combine): ", x->plan.series) : "";
  why = x->blocked
            ? series +
                  fmt::format("blocked: {} dispatches (each workgroup scans {} positions in its memory, {}; leaves {})",
                              x->levels.size(), x->plan.block, shape,
                              x->plan.direct ? "bound directly" : "packed into one buffer") +
                  first_and_last(ap, x->levels)
            : fmt::format("Kogge-Stone: {} rounds of one shader (one invocation per position, every leaf at once)",
                          rounds);
  return remember(key, {ScanPath::fused, why, x});
}

const ScanPlan& ScanRunner::remember(const std::string& key, ScanPlan plan) {
  trim_unused(
      plans_, [](const ScanPlan& v) -> const auto& { return v.exe; });
  return plans_[key] = std::move(plan);
}

void ScanRunner::run(Executable& exe, std::span<Buf* const> in, std::span<Buf* const> out, std::size_t live_bytes) {
  live_bytes_ = live_bytes;
  if (auto* sc = dynamic_cast<ScanExe*>(&exe)) return run_scan(*sc, in, out);
  if (auto* pe = dynamic_cast<PreencodedExe*>(&exe)) return run_preencoded(*pe, in, out);
  run_assoc(static_cast<AssocExe&>(exe), in, out);
}

void ScanRunner::run_scan(ScanExe& x, std::span<Buf* const> in, std::span<Buf* const> out) {
  const ScanShader& p = x.plan;
  Batch& b = rec_.batch_with_room(1, 2);
  std::unique_ptr<Buf> gin = scratch_buf(static_cast<std::size_t>(p.in_size) * 4),
                       gout = scratch_buf(static_cast<std::size_t>(p.out_size) * 4);
  std::vector<Recorder::Region> pack;
  for (std::size_t i = 0; i < in.size(); ++i)
    pack.push_back(
        {in[i]->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.in_words[i]) * 4, x.operands[i].bytes()});
  rec_.copy_disjoint(b, pack);
  VkDescriptorSet set = rec_.bind_set(b, *x.pipe, {gin->buf.get(), gout->buf.get()});
  // a length-0 scan still runs once over no steps: it moves the init carries to the results
  for (std::int64_t it0 = 0; it0 < std::max<std::int64_t>(x.length, 1); it0 += p.steps_per_dispatch) {
    rec_.barrier_for({gin->buf.get(), gout->buf.get()}, {gout->buf.get()}, b);
    const std::int32_t range[2] = {static_cast<std::int32_t>(it0),
                                   static_cast<std::int32_t>(std::min(x.length, it0 + p.steps_per_dispatch))};
    vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(range), range);
    rec_.record_dispatch(b, *x.pipe, set, p.sh.invocations, 2, p.workgroup);
  }
  std::vector<Recorder::Region> unpack;
  for (std::size_t r = 0; r < out.size(); ++r)
    unpack.push_back(
        {gout->buf.get(), static_cast<std::size_t>(p.out_words[r]) * 4, out[r]->buf.get(), 0, x.results[r].bytes()});
  rec_.copy_disjoint(b, unpack);
  b.released.push_back(std::move(gin));
  b.released.push_back(std::move(gout));
}

void ScanRunner::run_assoc(AssocExe& x, std::span<Buf* const> bound, std::span<Buf* const> out) {
  const AssocShader& p = x.plan;
  const std::size_t nc = static_cast<std::size_t>(x.num_consts), k = out.size();
  // consts | every leaf (a computed one: its output, bound but not read) | extra operands
  std::vector<Buf*> all(bound.begin(), bound.begin() + static_cast<std::ptrdiff_t>(nc));
  for (std::size_t l = 0, next = nc; l < k; ++l)
    all.push_back(!x.computed.empty() && x.computed[l] ? out[l] : bound[next++]);
  const std::span<Buf*const> in(all), extra = bound.subspan(bound.size() - x.extra);
  const bool direct = (x.blocked && p.direct) || (x.coop && p.coop->direct);
  // two sets (the blocked form's top level its own) of consts | leaves | extra | mode 3's totals
  Batch& b = rec_.batch_with_room(3, static_cast<std::uint32_t>(2 * (2 * k + 2 + x.extra)) + 4);
  // constants packed into gin; leaves packed into q[0] (the result ends in q[cur]), or (direct)
  // read from the inputs by the first level and scanned in place in the outputs
  std::unique_ptr<Buf> gin = scratch_buf(static_cast<std::size_t>(p.const_size) * 4);
  std::unique_ptr<Buf> q[2];
  if (!direct) {
    q[0] = scratch_buf(static_cast<std::size_t>(p.leaf_size) * 4);
    if (!x.blocked && !x.coop) q[1] = scratch_buf(static_cast<std::size_t>(p.leaf_size) * 4);
  }
  std::vector<Recorder::Region> pack;
  for (std::size_t i = 0; i < nc; ++i)
    pack.push_back(
        {in[i]->buf.get(), 0, gin->buf.get(), static_cast<std::size_t>(p.const_words[i]) * 4, x.operands[i].bytes()});
  if (!direct)
    for (std::size_t l = 0; l < k; ++l)
      pack.push_back({in[nc + l]->buf.get(), 0, q[0]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4,
                      x.operands[nc + l].bytes()});
  rec_.copy_disjoint(b, pack);
  int cur = 0;  // where the result ends: q[cur]
  if (x.coop)
    record_coop(x, b, gin->buf.get(), direct ? VK_NULL_HANDLE : q[0]->buf.get(), in, out);
  else if (x.blocked)
    record_blocked(x, b, gin->buf.get(), direct ? VK_NULL_HANDLE : q[0]->buf.get(), in, out, extra);
  else
    cur = record_kogge_stone(x, b, gin->buf.get(), q[0]->buf.get(), q[1]->buf.get());
  if (!direct) {
    std::vector<Recorder::Region> unpack;
    for (std::size_t l = 0; l < k; ++l)
      unpack.push_back({q[cur]->buf.get(), static_cast<std::size_t>(p.leaf_words[l]) * 4, out[l]->buf.get(), 0,
                        x.operands[nc + l].bytes()});
    rec_.copy_disjoint(b, unpack);
  }
  b.released.push_back(std::move(gin));
  for (auto& buf : q)
    if (buf) b.released.push_back(std::move(buf));
}

// The blocked form's levels; q0 the packed leaves, or (direct: null) the first level reads the
// inputs and every level scans the outputs in place.
void ScanRunner::record_blocked(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer q0, std::span<Buf* const> in,
                                std::span<Buf* const> out, std::span<Buf* const> extra) {
  const AssocShader& p = x.plan;
  const std::size_t nc = static_cast<std::size_t>(x.num_consts), k = out.size();
  const bool direct = q0 == VK_NULL_HANDLE;
  std::vector<VkBuffer> bufs{gin}, reads{gin}, writes;
  if (direct) {
    for (std::size_t l = 0; l < k; ++l) bufs.push_back(in[nc + l]->buf.get());
    for (std::size_t l = 0; l < k; ++l) bufs.push_back(out[l]->buf.get());
    writes.assign(bufs.begin() + 1 + static_cast<std::ptrdiff_t>(k), bufs.end());
    for (Buf* e : extra) bufs.push_back(e->buf.get());
    reads.insert(reads.end(), bufs.begin() + 1, bufs.end());
  } else {
    bufs.push_back(q0);
    reads.push_back(q0);
    writes.push_back(q0);
  }
  std::unique_ptr<Buf> totals;  // mode 3's block totals, bound last
  if (p.fix_totals > 0) {
    totals = scratch_buf(static_cast<std::size_t>(p.totals_bytes));
    bufs.push_back(totals->buf.get());
    reads.push_back(totals->buf.get());
    writes.push_back(totals->buf.get());
  }
  const std::int64_t c_top = x.top ? p.top_per_invocation : 1;
  VkDescriptorSet set = rec_.bind_set(b, *x.blocked, bufs);
  VkDescriptorSet top_set = x.top ? rec_.bind_set(b, *x.top, bufs) : VK_NULL_HANDLE;
  const auto& levels = x.levels;
  if (direct && levels.empty()) {  // one position (or none): the outputs are the inputs
    std::vector<Recorder::Region> same;
    for (std::size_t l = 0; l < k; ++l)
      same.push_back({in[nc + l]->buf.get(), 0, out[l]->buf.get(), 0, x.operands[nc + l].bytes()});
    rec_.copy_disjoint(b, same);
  }
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const BlockedLevel& lv = levels[i];
    const Pipeline& pipe = lv.top ? *x.top : *x.blocked;
    const std::int64_t C = lv.top ? c_top : 1;
    rec_.barrier_for(reads, writes, b);
    const std::int32_t pc[2] = {direct && i == 0 ? 2 : lv.mode, static_cast<std::int32_t>(lv.s)};
    vkCmdPushConstants(b.cmd, pipe.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
    rec_.record_dispatch(b, pipe, lv.top ? top_set : set, (x.length / lv.s + C - 1) / C, static_cast<int>(bufs.size()),
                         lv.top ? p.top_block : p.block,
                         static_cast<std::uint32_t>(std::max<std::int64_t>(p.series, 1)));
  }
  if (totals) b.released.push_back(std::move(totals));
}

// Kogge-Stone rounds d = 1, 2, 4, ..., ping-pong between q0 and q1; returns which holds the result.
int ScanRunner::record_kogge_stone(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer q0, VkBuffer q1) {
  const VkBuffer q[2] = {q0, q1};
  VkDescriptorSet sets[2] = {rec_.bind_set(b, *x.pipe, {gin, q0, q1}), rec_.bind_set(b, *x.pipe, {gin, q1, q0})};
  int cur = 0;
  for (std::int64_t d = 1; d < x.length; d *= 2, cur ^= 1) {
    rec_.barrier_for({gin, q[cur]}, {q[cur ^ 1]}, b);
    const std::int32_t dd = static_cast<std::int32_t>(d);
    vkCmdPushConstants(b.cmd, x.pipe->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(dd), &dd);
    rec_.record_dispatch(b, *x.pipe, sets[cur], x.plan.sh.invocations, 3);
  }
  return cur;
}

void ScanRunner::record_coop(AssocExe& x, Batch& b, VkBuffer gin, VkBuffer leaves, std::span<Buf* const> in,
                             std::span<Buf* const> out) {
  const AssocShader::Coop& c = *x.plan.coop;
  const std::size_t nc = static_cast<std::size_t>(x.num_consts), k = out.size();
  std::unique_ptr<Buf> scratch;
  std::vector<VkBuffer> bufs{gin}, writes;
  if (c.direct) {  // leaf inputs, then leaf outputs (scanned in place)
    for (std::size_t l = 0; l < k; ++l) bufs.push_back(in[nc + l]->buf.get());
    for (std::size_t l = 0; l < k; ++l) writes.push_back(out[l]->buf.get());
    bufs.insert(bufs.end(), writes.begin(), writes.end());
    if (x.levels.empty()) {  // one position (or none): the outputs are the inputs
      std::vector<Recorder::Region> same;
      for (std::size_t l = 0; l < k; ++l)
        same.push_back({in[nc + l]->buf.get(), 0, out[l]->buf.get(), 0, x.operands[nc + l].bytes()});
      rec_.copy_disjoint(b, same);
    }
  } else {
    bufs.push_back(leaves);
    writes.push_back(leaves);
  }
  if (c.scratch_words) {
    scratch = scratch_buf(static_cast<std::size_t>(c.max_groups * c.scratch_words) * 4);
    bufs.push_back(scratch->buf.get());
    writes.push_back(scratch->buf.get());
  }
  VkDescriptorSet set = rec_.bind_set(b, *x.coop, bufs);
  for (std::size_t i = 0; i < x.levels.size(); ++i) {
    const BlockedLevel& lv = x.levels[i];
    rec_.barrier_for(bufs, writes, b);
    const std::int32_t pc[2] = {c.direct && i == 0 ? 2 : lv.mode, static_cast<std::int32_t>(lv.s)};
    vkCmdPushConstants(b.cmd, x.coop->layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
    const std::int64_t count = x.length / lv.s, items = lv.mode == 0 ? (count + c.chunk - 1) / c.chunk : count;
    rec_.record_dispatch(b, *x.coop, set, std::min(items, c.max_groups) * c.wg, static_cast<int>(bufs.size()), c.wg);
  }
  if (scratch) b.released.push_back(std::move(scratch));
}

void ScanRunner::run_preencoded(PreencodedExe& x, std::span<Buf* const> in, std::span<Buf* const> out) {
  const ScanProgram& sp = x.sp;
  const Program& body = sp.body;
  const int nc = sp.num_consts, nk = sp.num_carry, nin = body.num_inputs;
  const std::size_t ny = body.outputs.size() - nk;
  Batch* bp =
      &rec_.batch_with_room(static_cast<std::uint32_t>(x.steps.size()), static_cast<std::uint32_t>(x.steps.size()) * 9);
  Batch& b = *bp;
  std::vector<VkBuffer> buf(body.buffers.size(), VK_NULL_HANDLE);
  std::vector<std::unique_ptr<Buf>> own;
  auto fresh = [&](std::size_t bytes) {
    own.push_back(scratch_buf(bytes));
    return own.back()->buf.get();
  };
  for (int i = 0; i < nc; ++i) buf[i] = in[i]->buf.get();
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
    sets.push_back(rec_.bind_set(b, *static_cast<KernelExe&>(*x.steps[i]).pipe, bs));
  }
  for (int k = 0; k < nk; ++k) rec_.copy(b, in[nc + k]->buf.get(), 0, buf[nc + k], 0, body.buffers[nc + k].bytes());
  for (std::int64_t it = 0; it < sp.length; ++it) {
    const std::int64_t t = sp.reverse ? sp.length - 1 - it : it;
    for (int j = nc + nk; j < nin; ++j) {
      const std::size_t bytes = body.buffers[j].bytes();
      rec_.copy(b, in[j]->buf.get(), static_cast<std::size_t>(t) * bytes, buf[j], 0, bytes);
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto& k = static_cast<KernelExe&>(*x.steps[i]);
      if (k.invocations == 0) continue;
      std::vector<VkBuffer> reads, writes;
      for (int v : steps[i]->in) reads.push_back(buf[v]);
      for (int v : steps[i]->out) writes.push_back(buf[v]);
      if (k.scratch) writes.push_back(k.scratch->buf.get());
      rec_.barrier_for(reads, writes, b);
      rec_.record_dispatch(b, *k.pipe, sets[i], k.invocations, k.buffers);
    }
    for (std::size_t j = 0; j < ny; ++j) {
      const int o = body.outputs[nk + j];
      const std::size_t bytes = body.buffers[o].bytes();
      rec_.copy(b, buf[o], 0, out[nk + j]->buf.get(), static_cast<std::size_t>(t) * bytes, bytes);
    }
    for (int k = 0; k < nk; ++k)
      if (body.outputs[k] != nc + k) rec_.copy(b, buf[body.outputs[k]], 0, stage[k], 0, body.buffers[nc + k].bytes());
    for (int k = 0; k < nk; ++k)
      if (body.outputs[k] != nc + k) rec_.copy(b, stage[k], 0, buf[nc + k], 0, body.buffers[nc + k].bytes());
  }
  for (int k = 0; k < nk; ++k) rec_.copy(b, buf[nc + k], 0, out[k]->buf.get(), 0, body.buffers[nc + k].bytes());
  for (auto& o : own) b.released.push_back(std::move(o));
}

}  // namespace jx::vk
