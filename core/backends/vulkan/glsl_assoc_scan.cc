// Associative scans as shaders, each combine inlined (kernels, routines, linear algebra): the form
// chosen (render_assoc_scan), the combine's code, the Kogge-Stone rounds, and a vmapped scan run
// for every series at once. The blocked form is glsl_assoc_blocked.cc, the cooperative one
// glsl_assoc_coop.cc.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_assoc_blocked.h"
#include "core/backends/vulkan/glsl_linalg.h"
#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/glsl_words.h"

namespace jx::vk {
namespace {

// The combine's steps into temporaries r<buffer>, each invocation alone (`rd` reads a buffer
// wherever it lives); returns the loop iterations they run.
std::int64_t combine_code(const AssocProgram& ap, const ScanLimits& lim,
                          const std::function<std::string(int, const std::string&)>& rd, Shader& into,
                          std::string& code) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  std::int64_t it = 0;
  for (std::size_t i = nc + 2 * k; i < b.buffers.size(); ++i)
    code += fmt::format("{} r{}[{}];\n", gtype(b.buffers[i].dtype), i, std::max<std::int64_t>(b.buffers[i].size(), 1));
  for (const Step& st : b.steps) {
    if (st.kind == Step::Kind::free) continue;
    auto load = [&](int in, const std::string& off) { return rd(st.in[in], off); };
    auto store = [&](const std::string& v) { return fmt::format("r{}[e] = {};\n", st.out[0], v); };
    const Op* op = st.kind == Step::Kind::routine ? &b.routines[st.index] : nullptr;
    const bool la = op && is_linalg(op->prim);  // the element's matrices in turn
    const std::int64_t m = la ? linalg_matrices(*op) : b.buffers[st.out[0]].size();
    code += element_loop(m) + "{\n";
    if (!op) {
      const Kernel& kk = b.kernels[st.index];
      code += kernel_element_code(KernelCtx{kk, lim.f64_math, load}, "e", into, store) + "}\n";
      it += m * (1 + reduce_iterations(kk));
    } else if (la) {
      auto store_at = [&](int o, const std::string& off, const std::string& v) {
        return fmt::format("r{}[{}] = {};\n", st.out[o], off, v);
      };
      auto load_out = [&](int o, const std::string& off) { return fmt::format("r{}[{}]", st.out[o], off); };
      code += linalg_matrix_code(*op, "e", lim.f64_math, into, load, load_out, store_at, true) + "}\n";
      it += m * (1 + linalg_iterations(*op));
    } else {
      code += routine_element_code(*op, "e", into, load, store) + "}\n";
      it += m * (1 + ((op->prim == Prim::argmax || op->prim == Prim::argmin) ? op->in[0].shape[op->params.axis] : 0));
    }
  }
  return it;
}

// The Kogge-Stone round shader into out.sh; false (the reason in `why`) where it cannot run.
bool render_kogge_stone(const AssocProgram& ap, const ScanLimits& lim, AssocShader& out, const LeafIndexFn& leaf_index,
                        std::string& why) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  const std::int64_t n = ap.operands[nc].shape[ap.axis];
  auto read = [&](int buf, const std::string& off) -> std::string {
    if (buf < nc) return gread("gin", b.buffers[buf].dtype, out.const_words[buf], off);
    if (buf < nc + 2 * k) {
      const int l = (buf - nc) % k;
      return gread("src", b.buffers[buf].dtype, out.leaf_words[l], leaf_index(l, buf < nc + k ? "partner" : "i", off));
    }
    return fmt::format("r{}[{}]", buf, off);
  };
  Shader& sh = out.sh;
  sh.name = "associative_scan";
  sh.buffers = 3;
  sh.invocations = n;
  std::vector<KNode> nodes;
  for (const Kernel& kk : b.kernels) nodes.insert(nodes.end(), kk.nodes.begin(), kk.nodes.end());
  sh.float64 = uses_double(ap.operands, DType::float32, nodes);
  std::string s = glsl_header(kWorkgroup);
  s += "layout(std430, set = 0, binding = 0) readonly buffer BI { uint d[]; } gin;\n";
  s += "layout(std430, set = 0, binding = 1) readonly buffer BS { uint d[]; } src;\n";
  s += "layout(std430, set = 0, binding = 2) buffer BD { uint d[]; } dst;\n";
  s += "layout(push_constant) uniform PC { int d; } pc;\n";
  s += prelude(sh.float64 || lim.f64_math, lim.f64_math);
  s += fmt::format(
      "void main() {{\nconst int i = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n"
      "if (i >= {}) return;\nconst int partner = {};\n",
      kWorkgroup, n, ap.reverse ? "i + pc.d" : "i - pc.d");
  std::int64_t loops = 0;
  // Kogge-Stone round: x[i] := x[partner] ⊕ x[i] where the partner exists, else copied
  s += fmt::format("if (partner < 0 || partner >= {}) {{\n", n);
  for (int l = 0; l < k; ++l) {
    const AVal& e = b.buffers[nc + l];
    const std::string idx = leaf_index(l, "i", "e");
    s += element_loop(e.size()) + fmt::format("{}", gwrite(e.dtype, out.leaf_words[l], idx,
                                                           gread("src", e.dtype, out.leaf_words[l], idx), "dst"));
    loops += e.size();
  }
  s += "return;\n}\n";
  loops += combine_code(ap, lim, read, sh, s);
  for (int l = 0; l < k; ++l) {
    const int o = b.outputs[l];
    const AVal& e = b.buffers[nc + l];
    s += element_loop(e.size()) +
         fmt::format("{}", gwrite(e.dtype, out.leaf_words[l], leaf_index(l, "i", "e"), read(o, "e"), "dst"));
    loops += e.size();
  }
  sh.glsl = s + "}\n";
  sh.max_loop = 0;
  if (lim.max_loop_iterations > 0 && loops > lim.max_loop_iterations) {
    why = fmt::format("one combine runs {} loop iterations, over the driver's {} per invocation", loops,
                      lim.max_loop_iterations);
    return false;
  }
  return true;
}

}  // namespace

std::string assoc_form() {
  const char* e = std::getenv("JX_VK_ASSOC");
  return e && *e ? e : "auto";
}

std::string leaf_bindings(int k, bool direct) {
  if (!direct) return "layout(std430, set = 0, binding = 1) buffer BD { uint d[]; } dst;\n";
  std::string s;
  for (int l = 0; l < k; ++l)
    s += fmt::format("layout(std430, set = 0, binding = {}) readonly buffer BL{} {{ uint d[]; }} li{};\n", 1 + l, l, l);
  for (int l = 0; l < k; ++l)
    s += fmt::format("layout(std430, set = 0, binding = {}) buffer BO{} {{ uint d[]; }} lo{};\n", 1 + k + l, l, l);
  return s;
}

std::string assoc_overrides() {
  std::string k = assoc_form();
  for (const char* name :
       {"JX_VK_COOP_CHUNK", "JX_VK_COOP_WG", "JX_VK_ODD_SLOTS", "JX_VK_COOP_LOOPS", "JX_VK_COOP_PREFETCH",
        "JX_VK_COOP_DIRECT", "JX_VK_COOP_WG_LUS", "JX_VK_SERIES_WG", "JX_VK_SKIP_UNREAD", "JX_VK_FIX_TOTALS"}) {
    const char* e = std::getenv(name);
    k += fmt::format("|{}", e ? e : "");
  }
  return k;
}

namespace {

// Why the combine cannot be inlined into a shader, or "".
std::string not_inlined(const Program& b) {
  for (const Step& st : b.steps)
    if (st.kind == Step::Kind::control ||
        (st.kind == Step::Kind::routine && !routine_inlines(b.routines[st.index].prim)))
      return fmt::format(
          "the combine has a {} step (not inlined into a shader)",
          st.kind == Step::Kind::routine ? prim_name(b.routines[st.index].prim) : std::string_view("scan"));
  return "";
}

// The packed layout of the constants (gin) and of the leaves.
void pack_assoc(const AssocProgram& ap, AssocShader& out) {
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  std::int64_t w = 0;
  for (int i = 0; i < nc; ++i) {
    out.const_words.push_back(w);
    w = align4(w + packed_words(ap.operands[i]));
  }
  out.const_size = std::max<std::int64_t>(w, 4);
  w = 0;
  for (int l = 0; l < k; ++l) {
    out.leaf_words.push_back(w);
    w = align4(w + packed_words(ap.operands[nc + l]));
  }
  out.leaf_size = std::max<std::int64_t>(w, 4);
}

// Elements after `axis` of a shape (at least 1).
std::int64_t post_axis(const Shape& s, std::int64_t axis) {
  std::int64_t post = 1;
  for (std::size_t d = axis + 1; d < s.size(); ++d) post *= s[d];
  return std::max<std::int64_t>(post, 1);
}

// Element e of leaf l at position pos: the leaf's row-major index with `axis` = pos.
LeafIndexFn leaf_index_of(const AssocProgram& ap) {
  return [&ap](int l, const std::string& pos, const std::string& e) {
    const Shape& s = ap.operands[ap.num_consts + l].shape;
    return fmt::format("((({2}) / {0}) * {1} + ({3})) * {0} + ({2}) % {0}", post_axis(s, ap.axis), s[ap.axis], e, pos);
  };
}

// A vmapped associative scan's unbatched combine as the blocked form run for every series at once:
// series z = gl_WorkGroupID.z reads and writes its slice of the batched leaves (the batch axis
// right before the scan axis `axis`, the unbatched one axis - 1: per-series element e is batched
// element ((e / post)·B + z)·post + e % post, so a series' positions lie together and neighbouring
// invocations read neighbouring elements) and of its batched constants (axis 0). Every leaf must
// be batched.
std::optional<AssocShader> render_series_assoc(const AssocProgram& ap, const ScanLimits& lim, std::string& why) {
  const SeriesBody& S = *ap.series;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc, ncu = S.num_consts;
  const std::string form = assoc_form();
  if (form != "auto" && form != "blocked") return std::nullopt;
  if (S.size > 65535 || S.first + ncu != nc || static_cast<int>(S.batched.size()) != ncu + k) {
    why = "the batch does not fit one dispatch's depth";
    return std::nullopt;
  }
  for (int l = 0; l < k; ++l)
    if (!S.batched[ncu + l]) {
      why = "a leaf is not batched";
      return std::nullopt;
    }
  if (why = not_inlined(S.body); !why.empty()) return std::nullopt;
  const std::int64_t ua = ap.axis - 1;  // the unbatched scan axis
  if (ua < 0) {
    why = "the leaves have no batch axis before the scan axis";
    return std::nullopt;
  }
  AssocProgram u{S.body, ncu, ua, ap.reverse, {}, nullptr, {}, {}, {}};  // one series' operands
  for (int i = 0; i < ncu; ++i) u.operands.push_back(S.body.buffers[i]);
  for (int l = 0; l < k; ++l) {
    AVal a = S.body.buffers[ncu + l];
    a.shape[ua] = ap.operands[nc + l].shape[ap.axis];
    u.operands.push_back(a);
  }
  AssocShader batched, out;
  pack_assoc(ap, batched);
  for (int i = 0; i < ncu; ++i) {
    out.const_words.push_back(batched.const_words[S.first + i]);
    out.const_shift.push_back(S.batched[i] ? fmt::format("int(gl_WorkGroupID.z) * {}", u.operands[i].size()) : "");
  }
  out.const_size = batched.const_size;
  out.leaf_words = batched.leaf_words;
  out.leaf_size = batched.leaf_size;
  const LeafIndexFn whole = leaf_index_of(ap);
  LeafIndexFn leaf_index = [&](int l, const std::string& pos, const std::string& e) {
    const std::int64_t post = post_axis(u.operands[ncu + l].shape, ua);
    return whole(l, pos,
                 fmt::format("((({0}) / {1}) * {2} + int(gl_WorkGroupID.z)) * {1} + ({0}) % {1}", e, post, S.size));
  };
  std::int64_t local = 0;
  for (std::size_t i = ncu + 2 * k; i < S.body.buffers.size(); ++i) local += shared_words(S.body.buffers[i]);
  std::vector<KNode> nodes;
  for (const Kernel& kk : S.body.kernels) nodes.insert(nodes.end(), kk.nodes.begin(), kk.nodes.end());
  out.sh.float64 = uses_double(u.operands, DType::float32, nodes);
  out.series = S.size;  // before the render: a per-series scan has no fix-up from the totals
  if (local <= 4096)
    render_blocked(
        u, lim, out, leaf_index,
        [&](auto rd, Shader& into, std::string& code) { return combine_code(u, lim, rd, into, code); },
        S.size >= kManySeries, &ap);
  if (!out.blocked) {
    why = ap.leaf_kernels.empty() ? "the unbatched combine has no blocked form"
                                  : "the unbatched combine has no blocked form that computes leaves";
    return std::nullopt;
  }
  out.blocked->name = "associative_scan_series";
  if (out.blocked_top) out.blocked_top->name = "associative_scan_series_top";
  return out;
}

}  // namespace

std::optional<AssocShader> render_assoc_scan(const AssocProgram& ap, const ScanLimits& lim, std::string& why) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  std::string not_series;
  if (ap.series && lim.series)
    if (auto s = render_series_assoc(ap, lim, not_series)) return s;
  if (why = not_inlined(b); !why.empty()) return std::nullopt;
  const bool computed = !ap.leaf_kernels.empty();  // only the blocked form computes leaves
  AssocShader out;
  pack_assoc(ap, out);
  const LeafIndexFn leaf_index = leaf_index_of(ap);
  const std::string form = assoc_form();
  std::int64_t local = 0;
  for (std::size_t i = nc + 2 * k; i < b.buffers.size(); ++i) local += shared_words(b.buffers[i]);
  bool ks = local <= 4096;  // the per-invocation forms keep the temporaries in registers
  if (!ks) why = fmt::format("the combine's temporaries take {} words per element, over 4096 registers", local);
  ks = ks && render_kogge_stone(ap, lim, out, leaf_index, why);
  if (ks && form != "coop" && form != "ks")
    render_blocked(
        ap, lim, out, leaf_index,
        [&](auto rd, Shader& into, std::string& code) { return combine_code(ap, lim, rd, into, code); }, false, &ap);
  // a combine with linear algebra or contractions (matmuls, as reductions or unrolled into
  // elementwise code), blocked in fewer than 128 positions per workgroup (large elements:
  // matrices of m ≥ 8), runs cooperatively: on the H100 at m = 8 (32-64 positions) the DLM
  // filter's scan took 25.9 ms blocked and 7.5 ms cooperative at N = 102400; the smoother's scan
  // at m = 13 took 22.3 ms blocked on the H200 (one warp per workgroup of 32 positions), the
  // whole smoother 19.0 ms of GPU time with it cooperative; at m = 8 (unrolled 8-term products,
  // 64 positions) the smoother 2.34 against 1.78 ms per call; at m = 2 (256 positions) 0.18
  // against 0.50 ms. Elementwise combines stay blocked.
  bool heavy = b.unrolled_sums > 0;
  for (const Step& st : b.steps)
    heavy = heavy || (st.kind == Step::Kind::routine && is_linalg(b.routines[st.index].prim)) ||
            (st.kind == Step::Kind::kernel && !b.kernels[st.index].reduce_axes.empty());
  const bool small_blocks = out.blocked && form == "auto" && heavy && out.block < 128 && !lim.costly_barriers;
  // llvmpipe: the cooperative form only where neither per-invocation form runs (a DLM gradient's
  // exact Hessian took 246 s cooperatively there, its barriers coroutine switches, against seconds
  // with Kogge-Stone)
  const bool prefer_ks = ks && form == "auto" && lim.costly_barriers;
  if ((!out.blocked || small_blocks) && !prefer_ks && form != "ks" && form != "blocked") {
    std::string coop_why;
    out.coop = render_coop_assoc(ap, lim, out, leaf_index, coop_why);
    if (!out.coop && !ks) why += "; not cooperative: " + coop_why;
    if (out.coop) out.blocked.reset(), out.blocked_top.reset();
  }
  if (computed && (!out.blocked || out.coop)) {
    why = "its leaves are computed only by the blocked form";
    return std::nullopt;
  }
  if (!ks && !out.coop) return std::nullopt;
  return out;
}

}  // namespace jx::vk
