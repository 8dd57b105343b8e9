// A long reduction over few outputs with its lanes across the outputs: the sum over time of
// per-time matrices that a gradient makes (out[i][j] = Σ_t Σ_k A_t[k][j] B_t[i][k] + ..., the
// m = 8 DLM gradient's [8, 8] from [102400, 8, 8]). The split form (glsl_renderer.cc) gives each
// output its own workgroups, whose lanes take consecutive t: a warp's loads of one term lie a
// whole matrix apart, one 32-byte sector a lane. On the H200 that kernel took 0.91 ms of the m = 8
// gradient's 4.92 ms of GPU time at N = 102400.
//
// Here lane ph·O + o of a workgroup owns output o (O outputs, P = the largest power of two with
// P·O ≤ 256 phases, lanes past P·O idle), so neighbouring lanes read neighbouring entries of one
// t. Workgroup p folds terms r = p·P + ph, p·P + ph + G·P, ... (G workgroups); its P phases fold
// in a fixed tree; each output's partial goes to the scratch buffer, and the last workgroup to
// count in folds the G partials of every output (lane (o, ph) those at q = ph, ph + P, ... in
// order, then the same tree), finishes the outputs and resets the counter, so the scratch buffer
// is left as it was found (zero). Deterministic whichever workgroup finishes last.
#include <algorithm>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"

namespace jx::vk {
namespace {

// Sectors a warp's read of one load touches per lane when its lanes step `stride` elements:
// at most 8 four-byte elements share a 32-byte sector.
std::int64_t spread(std::int64_t stride) { return std::min<std::int64_t>(std::abs(stride), 8); }

// Terms each invocation folds (JX_VK_OUTS_TERMS overrides, for measuring), and the most workgroups.
constexpr std::int64_t kOutsTerms = 16;
constexpr std::int64_t kOutsMaxSplit = 512;

}  // namespace

std::int64_t outputs_in_lanes_phases(const Kernel& k) {
  static const bool on = !env_is_zero("JX_VK_OUTS_IN_LANES");
  const std::int64_t outs = k.out.size();
  const std::size_t last = k.space.size() - 1;
  if (!on || !k.is_reduction() || outs < 2 || outs > kWorkgroup || k.space.empty() || reduced_dim(k, last)) return 0;
  // lanes step the last (output) dim here, the innermost reduced dim in the split form
  const std::size_t red = static_cast<std::size_t>(k.reduce_axes.back());
  std::int64_t here = 0, there = 0;
  for (const KLoad& l : k.loads) {
    if (l.indexed) continue;
    here += spread(l.strides[last]);
    there += spread(l.strides[red]);
  }
  if (here >= there) return 0;
  std::int64_t P = 1;
  while (2 * P * outs <= kWorkgroup) P *= 2;
  return P;
}

Shader render_outputs_in_lanes(const Kernel& k, bool f64_math, std::int64_t P) {
  const std::int64_t reduced = reduced_elements(k), O = k.out.size();
  static const std::int64_t terms = std::max<std::int64_t>(1, env_int("JX_VK_OUTS_TERMS", kOutsTerms));
  const std::int64_t G = std::clamp<std::int64_t>((reduced + P * terms - 1) / (P * terms), 2, kOutsMaxSplit);
  KernelCtx c{k, f64_math, nullptr};
  Shader sh;
  sh.name = k.name + "_split_outs";
  sh.buffers = k.buffers() + 1;
  sh.float64 = uses_double(k.inputs, k.out.dtype, k.nodes);
  sh.invocations = G * kWorkgroup;
  const std::string at = accumulator_type(k, f64_math);
  sh.scratch_bytes = static_cast<std::size_t>(O * G) * (at == "double" ? 8 : 4) + 4;
  std::string s = kernel_header(k.inputs, k.out.dtype, sh.float64 || f64_math, f64_math, sh.invocations);
  s.insert(s.find("void main() {"),
           fmt::format("shared {0} red_[{1}];\nshared bool last_;\nlayout(std430, set = 0, binding = {2}) coherent "
                       "buffer BS {{ {0} part_[{3}]; uint cnt_[1]; }} scr;\n",
                       at, kWorkgroup, k.buffers(), O * G));
  s += fmt::format(
      "  const int wg = gi / {0};\n  const int lid = int(gl_LocalInvocationIndex);\n  const int ph_ = lid / {1};\n"
      "  const int o_ = lid - ph_ * {1};\n  const bool live_ = ph_ < {2};\n",
      kWorkgroup, O, P);
  const SpaceSplit sp = split_space(k);
  s += strided_terms(c, sp, at, "o_", fmt::format("live_ ? wg * {} + ph_ : {}", P, reduced), G * P);
  // the phases of each output folded pairwise in a fixed tree: lane o then holds its partial
  const std::string tree = tree_fold(k, at, "red_", "ph_", P / 2, O);
  s += tree;
  s += fmt::format(
      "  if (lid < {0}) {{\n    scr.part_[lid * {1} + wg] = red_[lid];\n    memoryBarrierBuffer();\n  }}\n  "
      "barrier();\n"
      "  if (lid == 0) last_ = atomicAdd(scr.cnt_[0], 1u) == {2}u;\n  barrier();\n  if (!last_) return;\n"
      "  memoryBarrierBuffer();\n",
      O, G, G - 1);
  s += fmt::format(
      "  acc = {0};\n  if (live_) for (int q_ = ph_; q_ < {1}; q_ += {2}) {{\n    {3} b_ = scr.part_[o_ * {1} + q_];\n "
      "   {4}  }}\n",
      reduction_identity(k, at), G, P, at, combine_code(k, "acc", "b_"));
  s +=
      tree + "  if (lid == 0) scr.cnt_[0] = 0u;\n  if (lid >= " + std::to_string(O) + ") return;\n  acc = red_[lid];\n";
  s += reduction_finish(c, sp.idx, [&](const std::string& v) { return store_code(k.out.dtype, "o_", v); });
  sh.glsl = s + "}\n";
  sh.max_loop = std::max((reduced + G * P - 1) / (G * P), (G + P - 1) / P);
  return sh;
}

}  // namespace jx::vk
