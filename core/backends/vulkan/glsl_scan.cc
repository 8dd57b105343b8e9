// The fused loop shader of lax.scan: the body's buffers placed (registers, local arrays, workgroup
// or global memory), then the elementwise or one-workgroup body emitted.
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_scan.h"

#include "core/backends/vulkan/glsl_linalg.h"
#include "core/backends/vulkan/glsl_words.h"
#include "core/backends/vulkan/glsl_workgroup.h"

#include <algorithm>
#include <functional>
#include <fmt/format.h>

namespace jx::vk {
namespace {

// Bodies whose every step has at most this many elements run in one invocation, without
// barriers (a barrier costs more than a few scalar operations); JX_SCAN_SINGLE_MAX overrides
// (0: never).
std::int64_t single_max() {
  static const std::int64_t v = [] {
    const char* e = std::getenv("JX_SCAN_SINGLE_MAX");
    return e ? std::atoll(e) : 16;
  }();
  return v;
}

bool identity_view(const Kernel& k, const KLoad& l, std::int64_t n) {
  return numel(k.space) == n && !l.indexed && l.offset == 0 && l.strides == row_major_strides(k.space);
}

}  // namespace

bool series_scans() { return !env_is_zero("JX_VK_SERIES"); }

std::int64_t packed_words(const AVal& a) {
  if (a.dtype == DType::bool_) return (a.size() + 3) / 4;
  return a.size() * (a.dtype == DType::float64 ? 2 : 1);
}

namespace {

// Why the body cannot run as one shader (a nested scan, a routine with no shader), or empty.
std::string unsupported_body(const Program& b) {
  for (const Step& st : b.steps) {
    if (st.kind == Step::Kind::control) return "a nested scan in the body";
    if (st.kind == Step::Kind::routine && !routine_inlines(b.routines[st.index].prim))
      return fmt::format("the body has a {} routine (it runs on the host)", prim_name(b.routines[st.index].prim));
  }
  return "";
}

// The packed layouts: operands consts | init | xs, results carries | ys (word offsets, sizes).
void pack_layouts(const ScanProgram& sp, ScanShader& out) {
  std::int64_t w = 0;
  for (const AVal& a : sp.operands) {
    out.in_words.push_back(w);
    w = align4(w + packed_words(a));
  }
  out.in_size = std::max<std::int64_t>(w, 4);
  w = 0;
  for (const AVal& a : sp.results) {
    out.out_words.push_back(w);
    w = align4(w + packed_words(a));
  }
  out.out_size = std::max<std::int64_t>(w, 4);
}

// Where the body's buffers live and how the shader runs it: elementwise (one invocation per
// element, carries in registers), single (one invocation, local arrays, no barriers) or one
// workgroup (workgroup memory, barriers). The staging buffer of carry k is loc[nbuf + k].
// Per series (B > 0: a vmapped scan's unbatched body, ScanProgram::series): the same run by an
// invocation (single) or a workgroup per series `ser`, on its slice of every batched operand
// and result; body input i is operand first + i.
struct ShaderLayout {
  const Program& b;
  int nc, nk, nin, ny, nbuf;
  int first = 0;
  std::int64_t B = 0;
  std::int64_t n = -1;  // elementwise: the elements of every non-constant buffer
  bool ew = false, single = false, staged = false;
  std::int64_t smem = 0;  // words of workgroup memory
  bool spilled = false;   // some buffers live in gout past the results (barriers cover buffer memory)
  std::vector<Loc> loc = {};
  // a carry slot rewritten from elsewhere while an output still reads it (it needs staging)
  bool updated(int slot) const { return b.outputs[slot - nc] != slot; }
  // element e of this series' slice of a packed operand or result of m elements per series:
  // carries and batched consts (B, ...), or (x_row) the step's row of xs and ys (length, B, ...)
  std::string at(std::int64_t m, const std::string& e, bool x_row) const {
    if (!B) return x_row ? fmt::format("t * {} + {}", m, e) : e;
    return x_row ? fmt::format("t * {} + ser * {} + {}", B * m, m, e) : fmt::format("ser * {} + {}", m, e);
  }
};

constexpr std::int64_t kSpillWidest = 4 * kWorkgroup;

// Buffers kept in workgroup memory when all of them do not fit in `shared_words`: the largest
// temporaries move to global memory first, then the largest carries (spill[i] set; the carries'
// staging copies stay in workgroup memory).
std::vector<bool> spill_plan(const ShaderLayout& L, std::int64_t shared_words_max) {
  const Program& b = L.b;
  std::vector<bool> spill(b.buffers.size(), false);
  // Only bodies of small buffers (matrices up to 32 × 32): one workgroup striding over wide
  // buffers in global memory is no faster than a dispatch per step over the whole GPU.
  for (std::size_t i = L.nc; i < b.buffers.size(); ++i)
    if (b.buffers[i].size() > kSpillWidest) return spill;
  std::int64_t need = L.smem;
  std::vector<int> order;
  for (std::size_t i = L.nc; i < b.buffers.size(); ++i)
    if (i < static_cast<std::size_t>(L.nc + L.nk) || i >= static_cast<std::size_t>(L.nin)) order.push_back(int(i));
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const bool tx = x >= L.nin, ty = y >= L.nin;  // temporaries first, larger first
    return tx != ty ? tx : shared_words(b.buffers[x]) > shared_words(b.buffers[y]);
  });
  for (int i : order) {
    if (need <= shared_words_max) break;
    spill[i] = true;
    need -= shared_words(b.buffers[i]);
  }
  return spill;
}

ShaderLayout layout_of(const ScanProgram& sp, ScanShader& out, std::int64_t shared_words_max, bool per_series) {
  const ScanProgram::Series* ser = per_series ? sp.series.get() : nullptr;
  const Program& b = ser ? ser->body : sp.body;
  ShaderLayout L{b,
                 ser ? ser->num_consts : sp.num_consts,
                 sp.num_carry,
                 b.num_inputs,
                 static_cast<int>(b.outputs.size()) - sp.num_carry,
                 static_cast<int>(b.buffers.size())};
  const int nc = L.nc, nk = L.nk, nin = L.nin;
  if (ser) {
    L.first = ser->first;
    L.B = ser->size;
  }
  // elementwise bodies: every non-constant buffer has n elements and is read element for element
  const std::int64_t n = nk ? b.buffers[nc].size() : (nin > nc ? b.buffers[nc].size() : -1);
  bool ew = n > 0;
  for (std::size_t i = nc; ew && i < b.buffers.size(); ++i) ew = b.buffers[i].size() == n;
  for (const Step& st : b.steps) {
    if (st.kind == Step::Kind::routine) ew = false;
    if (!ew || st.kind != Step::Kind::kernel) continue;
    const Kernel& k = b.kernels[st.index];
    if (k.is_reduction()) ew = false;
    for (const KLoad& l : k.loads)
      if (st.in[l.buffer] >= nc && !identity_view(k, l, n)) ew = false;
  }
  L.n = n;
  L.ew = ew;
  // single-invocation bodies (every buffer at most single_max() elements): no barriers, and
  // carries and temporaries in local arrays instead of workgroup memory
  std::int64_t widest = 0;
  for (std::size_t i = nc; i < b.buffers.size(); ++i) widest = std::max(widest, b.buffers[i].size());
  const bool single = L.single = !ew && widest <= single_max();
  std::vector<Loc>& loc = L.loc;
  loc.resize(b.buffers.size());
  for (int i = 0; i < nc; ++i) loc[i] = {Home::global_in, out.in_words[L.first + i], b.buffers[i]};
  for (int i = nc + nk; i < nin; ++i) loc[i] = {Home::global_x, out.in_words[L.first + i], b.buffers[i]};
  for (int i = 0; ser && i < nin; ++i)
    if (ser->batched[i] && (i < nc || i >= nc + nk)) {
      loc[i].shift = fmt::format("ser * {}", b.buffers[i].size());
      if (i >= nc + nk) loc[i].row = L.B * b.buffers[i].size();
    }
  std::int64_t& smem = L.smem;
  for (int o : b.outputs)
    if (o >= nc && o < nc + nk && L.updated(o)) L.staged = true;
  for (std::size_t i = nc; i < b.buffers.size(); ++i)
    if ((i < static_cast<std::size_t>(nc + nk) || i >= static_cast<std::size_t>(nin)) && !ew && !single)
      smem += shared_words(b.buffers[i]) +
              (L.staged && i < static_cast<std::size_t>(nc + nk) && L.updated(int(i)) ? shared_words(b.buffers[i]) : 0);
  const std::vector<bool> spill = spill_plan(L, shared_words_max);
  smem = 0;
  for (std::size_t i = nc; i < b.buffers.size(); ++i) {
    if (i >= static_cast<std::size_t>(nc + nk) && i < static_cast<std::size_t>(nin)) continue;
    if (ew) {
      loc[i] = {Home::reg, 0, b.buffers[i]};
    } else if (single) {
      loc[i] = {Home::local, 0, b.buffers[i]};
    } else if (spill[i]) {
      loc[i] = {Home::global_out, out.out_size, b.buffers[i]};
      out.out_size = align4(out.out_size + packed_words(b.buffers[i]));
      L.spilled = true;
    } else {
      loc[i] = {Home::shared, smem, b.buffers[i]};
      smem += shared_words(b.buffers[i]);
    }
  }
  loc.resize(b.buffers.size() + nk);
  if (L.staged && !ew)
    for (int k = 0; k < nk; ++k)
      if (L.updated(nc + k)) {
        if (single) {
          loc[L.nbuf + k] = {Home::local, 0, b.buffers[nc + k]};
        } else {
          loc[L.nbuf + k] = {Home::shared, smem, b.buffers[nc + k]};
          smem += shared_words(b.buffers[nc + k]);
        }
      }
  return L;
}

// The elementwise body: each invocation carries its element through every step.
std::string elementwise_body(const ShaderLayout& L, ScanShader& out, const ScanLimits& lim, const std::string& t) {
  const Program& b = L.b;
  const int nc = L.nc, nk = L.nk, nin = L.nin, ny = L.ny;
  const std::int64_t n = L.n;
  const std::vector<Loc>& loc = L.loc;
  Shader& sh = out.sh;
  auto updated = [&](int slot) { return L.updated(slot); };
  std::string s;
  out.mode = fmt::format("one invocation per element ({} elements), carries in registers", n);
  sh.invocations = n;
  s += fmt::format(
      "const int e = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n"
      "if (e >= {}) return;\n",
      kWorkgroup, n);
  for (int k = 0; k < nk; ++k) {
    const DType d = b.buffers[nc + k].dtype;
    s += fmt::format("{} r{} = pc.it0 == 0 ? {} : {};\n", gtype(d), nc + k, gread("gin", d, out.in_words[nc + k], "e"),
                     gread("gout", d, out.out_words[k], "e"));
  }
  s += "for (int it = pc.it0; it < pc.it1; ++it) {\n";
  s += fmt::format("const int t = {};\n", t);
  for (std::size_t i = nin; i < b.buffers.size(); ++i) s += fmt::format("{} r{};\n", gtype(b.buffers[i].dtype), i);
  for (const Step& st : b.steps) {
    if (st.kind != Step::Kind::kernel) continue;
    const Kernel& k = b.kernels[st.index];
    KernelCtx c{k, lim.f64_math,
                [&](int in, const std::string& off) { return read_loc(loc[st.in[in]], st.in[in], off); }};
    s += "{\n" +
         kernel_element_code(c, "e", sh,
                             [&](const std::string& v) { return fmt::format("r{} = {};\n", st.out[0], v); }) +
         "}\n";
  }
  for (int j = 0; j < ny; ++j) {
    const int o = b.outputs[nk + j];
    s += gwrite(loc[o].aval.dtype, out.out_words[nk + j], fmt::format("t * {} + e", n), read_loc(loc[o], o, "e"));
  }
  for (int k = 0; k < nk; ++k)
    if (updated(nc + k))
      s += fmt::format("{} s{} = {};\n", gtype(b.buffers[nc + k].dtype), k,
                       read_loc(loc[b.outputs[k]], b.outputs[k], "e"));
  for (int k = 0; k < nk; ++k)
    if (updated(nc + k)) s += fmt::format("r{} = s{};\n", nc + k, k);
  s += "}\n";
  for (int k = 0; k < nk; ++k) s += gwrite(b.buffers[nc + k].dtype, out.out_words[k], "e", fmt::format("r{}", nc + k));
  return s;
}

std::int64_t spilled_bytes(const ShaderLayout& L) {
  std::int64_t w = 0;
  for (const Loc& l : L.loc)
    if (l.home == Home::global_out) w += packed_words(l.aval);
  return w * 4;
}

// The one-workgroup shader's prologue: its mode (as `jxlab` and JX_DEBUG report it), its
// invocations, `lid`, the series index `ser` of a batched scan, and a single invocation's local
// arrays.
std::string workgroup_prologue(const ShaderLayout& L, ScanShader& out) {
  const bool single = L.single;
  Shader& sh = out.sh;
  std::string s;
  out.one_workgroup = true;
  const char* unit = L.B ? (single ? "" : "a workgroup per series, ") : "one workgroup, ";
  out.mode = single ? fmt::format("{}{} (every step has at most {} elements), carries and temporaries in local arrays",
                                  unit, L.B ? "one invocation per series" : "one invocation", single_max())
                    : fmt::format("{}{} bytes of carries and temporaries in workgroup memory{}", unit, L.smem * 4,
                                  L.spilled ? fmt::format(" ({} bytes more in global memory)", spilled_bytes(L)) : "");
  sh.invocations = kWorkgroup;
  s += "const int lid = int(gl_LocalInvocationIndex);\n";
  if (L.B) {  // an invocation (single) or a workgroup per series
    sh.invocations = L.B * (single ? 1 : kWorkgroup);
    s += single ? fmt::format(
                      "const int ser = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
                      "gl_LocalInvocationIndex);\nif (ser >= {}) return;\n",
                      kSeriesWorkgroup, L.B)
                : "const int ser = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x);\n";
    out.mode = fmt::format("per series ({} {}): {}", L.B, single ? "invocations" : "workgroups", out.mode);
  }
  if (single) {
    if (!L.B) s += "if (lid != 0) return;\n";
    for (std::size_t i = L.nc; i < L.loc.size(); ++i)
      if (L.loc[i].home == Home::local)
        s += fmt::format("{} L{}[{}];\n", gtype(L.loc[i].aval.dtype), i,
                         std::max<std::int64_t>(L.loc[i].aval.size(), 1));
  }
  return s;
}

// The one-workgroup body (single: one invocation): each step's kernels and routines strided
// over the workgroup, a barrier where a buffer is read after a write. Adds the loop iterations
// one step costs an invocation to per_step.
std::string workgroup_body(const ShaderLayout& L, ScanShader& out, const ScanLimits& lim, const std::string& t,
                           std::int64_t& per_step) {
  const Program& b = L.b;
  const int nc = L.nc, nk = L.nk, ny = L.ny, nbuf = L.nbuf;
  const bool single = L.single, staged = L.staged;
  const std::vector<Loc>& loc = L.loc;
  Shader& sh = out.sh;
  auto updated = [&](int slot) { return L.updated(slot); };
  std::string s = workgroup_prologue(L, out);
  auto strided = [single](std::int64_t m, const std::string& body) { return strided_loop(m, body, single); };
  auto strided_iterations = [single](std::int64_t m) { return loop_iterations(m, single); };
  // a spilled buffer's writes reach the workgroup's other invocations through buffer memory
  const std::string barrier = single ? "" : L.spilled ? "memoryBarrierBuffer();\nbarrier();\n" : "barrier();\n";
  for (int k = 0; k < nk; ++k) {
    const Loc& l = loc[nc + k];
    const DType d = l.aval.dtype;
    s += strided(l.aval.size(),
                 write_loc(l, nc + k, "e",
                           fmt::format("pc.it0 == 0 ? {} : {}",
                                       gread("gin", d, out.in_words[L.first + nc + k], L.at(l.aval.size(), "e", false)),
                                       gread("gout", d, out.out_words[k], L.at(l.aval.size(), "e", false)))));
  }
  s += barrier + "for (int it = pc.it0; it < pc.it1; ++it) {\n";
  s += fmt::format("const int t = {};\n", t);
  const WorkgroupSteps steps = workgroup_steps(b, loc, single, kWorkgroup, barrier, lim.f64_math, sh);
  s += steps.code;
  per_step += steps.iterations;
  const int barriers = steps.barriers;
  s += barrier;
  for (int j = 0; j < ny; ++j) {
    const int o = b.outputs[nk + j];
    const std::int64_t m = loc[o].aval.size();
    s += strided(m, gwrite(loc[o].aval.dtype, out.out_words[nk + j], L.at(m, "e", true), read_loc(loc[o], o, "e")));
    per_step += strided_iterations(m);
  }
  for (int k = 0; k < nk; ++k) {
    if (!updated(nc + k)) continue;
    const Loc& l = loc[nc + k];
    const std::string v = read_loc(loc[b.outputs[k]], b.outputs[k], "e");
    s += strided(l.aval.size(), staged ? write_loc(loc[nbuf + k], nbuf + k, "e", v) : write_loc(l, nc + k, "e", v));
    per_step += strided_iterations(l.aval.size());
  }
  if (staged) {
    s += barrier;
    for (int k = 0; k < nk; ++k)
      if (updated(nc + k)) {
        const Loc& l = loc[nc + k];
        s += strided(l.aval.size(), write_loc(l, nc + k, "e", read_loc(loc[nbuf + k], nbuf + k, "e")));
        per_step += strided_iterations(l.aval.size());
      }
  }
  s += barrier + "}\n";
  for (int k = 0; k < nk; ++k) {
    const Loc& l = loc[nc + k];
    s += strided(l.aval.size(),
                 gwrite(l.aval.dtype, out.out_words[k], L.at(l.aval.size(), "e", false), read_loc(l, nc + k, "e")));
  }
  out.mode += single ? ", no barriers" : fmt::format(", {} barriers per step", barriers + 2 + (staged ? 1 : 0));
  return s;
}

// The loop shader of `sp`'s body, or (per_series) of its unbatched body run per series.
std::optional<ScanShader> render_scan_shader(const ScanProgram& sp, const ScanLimits& lim, std::string& why,
                                             bool per_series) {
  const Program& body = per_series ? sp.series->body : sp.body;
  if (why = unsupported_body(body); !why.empty()) return std::nullopt;
  ScanShader out;
  pack_layouts(sp, out);
  const ShaderLayout L = layout_of(sp, out, lim.shared_bytes / 4, per_series);
  if (!L.ew && L.smem * 4 > lim.shared_bytes) {
    why = fmt::format("carries and temporaries take {} bytes, over the {} bytes of workgroup memory", L.smem * 4,
                      lim.shared_bytes);
    return std::nullopt;
  }
  if (per_series && (L.ew || L.spilled)) {  // the batched body runs as well or better
    why = L.ew ? "the body is elementwise" : "the body's buffers overflow workgroup memory";
    return std::nullopt;
  }

  Shader& sh = out.sh;
  sh.name = "scan";
  sh.buffers = 2;
  std::vector<KNode> nodes;
  for (const Kernel& k : body.kernels) nodes.insert(nodes.end(), k.nodes.begin(), k.nodes.end());
  sh.float64 = uses_double(body.buffers, DType::float32, nodes);
  const std::string t = sp.reverse ? fmt::format("{} - 1 - it", sp.length) : "it";
  out.workgroup = L.B && L.single ? kSeriesWorkgroup : kWorkgroup;
  std::string s = glsl_header(out.workgroup);
  s += "layout(std430, set = 0, binding = 0) readonly buffer BI { uint d[]; } gin;\n";
  s += fmt::format("layout(std430, set = 0, binding = 1) {}buffer BO {{ uint d[]; }} gout;\n",
                   L.spilled ? "coherent " : "");
  s += "layout(push_constant) uniform PC { int it0; int it1; } pc;\n";
  if (!L.ew && L.smem) s += shared_decl(L.smem, lim.checked_shared);
  s += prelude(sh.float64 || lim.f64_math, lim.f64_math);
  s += "void main() {\n";
  std::int64_t per_step = 1;  // loop iterations one invocation runs per step (llvmpipe's limit)
  s += L.ew ? elementwise_body(L, out, lim, t) : workgroup_body(L, out, lim, t, per_step);
  sh.glsl = s + "}\n";
  sh.max_loop = sp.length;
  out.steps_per_dispatch = std::max<std::int64_t>(sp.length, 1);
  if (lim.max_loop_iterations > 0) {
    const std::int64_t room = lim.max_loop_iterations - 64;  // the carry loads and stores
    if (per_step > room) {
      why = fmt::format("one step runs {} loop iterations, over the driver's {} per invocation", per_step,
                        lim.max_loop_iterations);
      return std::nullopt;
    }
    out.steps_per_dispatch = std::min(out.steps_per_dispatch, room / per_step);
    sh.max_loop = std::min(sh.max_loop, out.steps_per_dispatch);
  }
  return out;
}

}  // namespace

// A vmapped scan runs per series where its batched body would need one workgroup for the whole
// batch (the series are independent: B workgroups, or B invocations, instead of one), unless
// the batched body is elementwise (already an invocation per element).
std::optional<ScanShader> render_fused_scan(const ScanProgram& sp, const ScanLimits& lim, std::string& why) {
  std::optional<ScanShader> batched = render_scan_shader(sp, lim, why, false);
  if (!sp.series || !lim.series || (batched && !batched->one_workgroup)) return batched;
  std::string not_series;
  if (auto s = render_scan_shader(sp, lim, not_series, true)) return s;
  if (batched) batched->mode += fmt::format(" (not per series: {})", not_series);
  return batched;
}

}  // namespace jx::vk
