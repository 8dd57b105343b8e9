// Associative scans as shaders: the blocked scan (work-efficient over workgroups) and the
// Kogge-Stone rounds, each combine inlined (kernels, routines, linear algebra).
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_linalg.h"
#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_scan.h"
#include "core/backends/vulkan/glsl_words.h"

namespace jx::vk {
namespace {

// A loop over an element's values (`e`): unrolled where at most kUnrollMax long and the device
// unrolls (unroll_loops), so the indices of the element arrays become constants and the arrays
// registers rather than memory private to the invocation.
constexpr std::int64_t kUnrollMax = 64;
std::string element_loop(std::int64_t count) {
  return fmt::format("{}for (int e = 0; e < {}; ++e) ", unroll_loops() && count <= kUnrollMax ? "[[unroll]] " : "",
                     count);
}

// The blocked scan (work-efficient over workgroups; Kogge-Stone inside one): in place on the
// packed leaves, push constants {mode, s}. Invocation m owns C consecutive positions p = C·m + c,
// each at j = s·p + s - 1 (logical order, mirrored for reverse); a workgroup of B invocations
// (256, halved down to 32 while B elements overflow workgroup memory) owns a block of B·C
// positions. mode 0: each invocation scans its C elements in registers, the workgroup scans the
// B totals in workgroup memory (log2 B rounds), and every element takes the total of the
// invocations before it, so position j holds the combine of its block's from the block's first
// on. mode 1 (fix-up): j outside the first superblock of S = B·C·s positions, and not the last of
// its superblock, becomes x[q] ⊕ x[j] with q the last position of the previous superblock
// (already holding its full prefix). run_assoc scans up s = 1, B, ... with C = 1 (one position per
// invocation: the most workgroups in flight, which is what a GPU's latency needs) until a level
// fits one workgroup: the top level, where C = ceil(positions / B) ≤ 4 (its own shader); then
// fixes up the levels below: 3 dispatches at n = 102400 and B = 256 (400 totals, C = 2 at the top).
// Up to B·kFixTotals + 1 blocks, mode 3 replaces the top level and the fix-up (blocked_fix_totals:
// 2 dispatches).
// Element values live in module-scope arrays (private per invocation), so the combine,
// xa := pa ⊕ xa, is one function called from every place. Where the budget has 2k + 1 bindings
// (k leaves), each leaf binds its input and its output (no packing copies): mode 2 is mode 0
// reading the inputs, for the first level; every other dispatch works in place on the outputs.
//
// Many series at once (kManySeries, where workgroups are plentiful): the levels below the top
// take small workgroups (kSeriesGroup, kSeriesWarpGroup), and the top level a workgroup of its
// own (AssocShader::top_block). (Tried, not kept: C elements folded in a loop from global memory
// where they do not fit registers, 2026-11-29-h200-looped-ab: the B = 1024 gradient 2.2 -> 3.2
// ms, a top level of 7 per invocation 0.036 -> 0.10 ms; Brent-Kung rounds instead of
// Kogge-Stone, 2026-11-29-h200-series-wg-ab/tree: fewer combines in more rounds, slower.)

// Appends the combine's steps to the text (the reads through the function given: a buffer and an
// offset to an expression; combine_code) and returns the loop iterations they run.
using CombineText =
    std::function<std::int64_t(const std::function<std::string(int, const std::string&)>&, Shader&, std::string&)>;

// From this many series a blocked scan's levels below the top run in small workgroups, one
// position per invocation (the top level in a larger workgroup where it needs one): with 256
// series and more there are workgroups enough, and a level's time follows its rounds, log2(B)
// combines in a row. At B = 1024, N = 1600 on the H200 (2026-11-29-h200-series-wg-ab): the
// gradient's transposed scan (48 words, few warps resident) took 0.82 ms in workgroups of 128
// (7 rounds), 0.57 ms of 64, 0.48 ms of 32; the filter's scan (16 words) 0.36 ms with 4 positions
// per invocation in 256, ~0.21 ms one per invocation in 64 (the filter 0.735 -> 0.534 ms a call,
// the gradient 1.911 -> 1.663 ms). JX_VK_SERIES_WG overrides the workgroup (read once). A single
// series keeps 256 (more levels cost more: the m = 2 gradient at N = 102400 0.30 -> 1.0 ms at 64).
constexpr std::int64_t kManySeries = 256;
constexpr std::int64_t kSeriesGroup = 64;
// an element too large for 4 positions in an invocation's registers (c_max < 4): one warp
constexpr std::int64_t kSeriesWarpGroup = 32;

// The blocked form's geometry for one scan.
struct BlockedPlan {
  std::vector<std::int64_t> sm_base;  // words of each leaf's element in a position's slot
  std::int64_t Ws = 0;                // a position's slot: the element's words, rounded up to odd
  std::int64_t B = 0;                 // invocations (and positions at C = 1) per workgroup
  std::int64_t regs = 0;              // the element's values
  std::int64_t c_max = 1;             // elements an invocation holds in registers
  std::int64_t c_top = 1;             // positions per invocation at the top (1 below it)
  std::int64_t B_top = 0;             // invocations of the top level's workgroup
  std::int64_t c_fix = 0;             // > 0: block totals an invocation folds in mode 3 (no top level)
  // gin, the leaves (each its input and output, or one packed buffer), the leaf kernels' extra
  // operands (render_blocked); mode 3's totals bind one more
  std::int64_t bindings = 0;
  bool direct = false;
};

// many: many series at once (small workgroups below the top: kSeriesGroup, kSeriesWarpGroup).
std::optional<BlockedPlan> plan_blocked(const AssocProgram& ap, const ScanLimits& lim, bool many) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  const std::int64_t n = ap.operands[nc].shape[ap.axis];
  BlockedPlan p;
  p.direct = static_cast<std::int64_t>(k) * 2 + 1 <= lim.max_buffers;
  std::int64_t W = 0;
  for (int l = 0; l < k; ++l) {
    p.sm_base.push_back(W);
    W += shared_words(b.buffers[nc + l]);
    p.regs += b.buffers[nc + l].size();
  }
  // Odd slots: the 32 invocations of a warp reading or writing word e of their slots hit 32
  // different banks (an even stride shares banks: W = 16, the m = 2 filter's element, made every
  // access a 16-way conflict). JX_VK_ODD_SLOTS=0: W words, as before (for measuring).
  static const bool odd_slots = !env_is_zero("JX_VK_ODD_SLOTS");
  p.Ws = W % 2 == 0 && odd_slots ? W + 1 : W;
  p.B = kWorkgroup;
  while (p.B > 32 && p.B * p.Ws * 4 > lim.shared_bytes) p.B /= 2;
  if (W == 0 || p.B * p.Ws * 4 > lim.shared_bytes) return std::nullopt;
  p.c_max = std::clamp<std::int64_t>(128 / std::max<std::int64_t>(p.regs, 1), 1, 4);
  const std::int64_t b_max = p.B;  // the most invocations a workgroup's memory holds slots for
  if (many) {
    static const std::int64_t series_wg = env_int("JX_VK_SERIES_WG", 0);
    p.B = std::clamp<std::int64_t>(series_wg > 0 ? series_wg
                                   : p.c_max < 4 ? kSeriesWarpGroup
                                                 : kSeriesGroup,
                                   32, b_max);
  }
  std::int64_t top = n;  // positions of the top level (strides B^L while more than a workgroup's worth)
  while (top > b_max * p.c_max) top /= p.B;
  p.c_top = top > b_max ? (top + b_max - 1) / b_max : 1;
  p.B_top = p.B;  // below b_max: a top workgroup of the least power of two that holds the top level
  while (p.B_top < b_max && p.B_top * p.c_top < top) p.B_top *= 2;
  return p;
}

// The text every level of one blocked scan shares: the element arrays, the leaves' loads and
// stores, workgroup-memory slots.
struct BlockedText {
  const AssocProgram& ap;
  const BlockedPlan& p;
  const AssocShader& out;
  const LeafIndexFn& leaf_index;
  int nc, k;
  std::int64_t n;
  // leaf kernels (AssocProgram::leaf_kernels; direct only): the program that has them (a vmapped
  // scan's batched one), its extra operands bound as in0.. after the leaf outputs
  const AssocProgram* computed = nullptr;
  // results nothing reads after the scan (AssocProgram::unread): the last fix-up leaves them
  const std::vector<bool>* unread = nullptr;
  bool f64 = true;
  Shader* sh = nullptr;  // the shader being rendered (a leaf kernel's code may need doubles)

  const AVal& elem(int l) const { return ap.body.buffers[nc + l]; }
  // buffer `buf` of the combine's body at offset `off`: a constant, pa (left), xa (right), a temporary
  std::string read(int buf, const std::string& off) const {
    const Program& b = ap.body;
    if (buf < nc && !out.const_shift.empty() && !out.const_shift[buf].empty())
      return gread("gin", b.buffers[buf].dtype, out.const_words[buf],
                   fmt::format("{} + ({})", out.const_shift[buf], off));
    if (buf < nc) return gread("gin", b.buffers[buf].dtype, out.const_words[buf], off);
    if (buf < nc + k) return fmt::format("pa{}[{}]", buf - nc, off);
    if (buf < nc + 2 * k) return fmt::format("xa{}[{}]", buf - nc - k, off);
    return fmt::format("r{}[{}]", buf, off);
  }
  std::string arrays(const std::string& name) const {
    std::string d;
    for (int l = 0; l < k; ++l)
      d += fmt::format("{} {}{}[{}];\n", gtype(elem(l).dtype), name, l, std::max<std::int64_t>(elem(l).size(), 1));
    return d;
  }
  std::string each(int l, const std::string& body) const { return element_loop(elem(l).size()) + "{ " + body + " }\n"; }
  std::string assign(const std::string& to, const std::string& from) const {
    std::string c;
    for (int l = 0; l < k; ++l) c += each(l, fmt::format("{0}{1}[e] = {2}{1}[e];", to, l, from));
    return c;
  }
  std::string phys(const std::string& logical) const {
    return ap.reverse ? fmt::format("({} - 1 - ({}))", n, logical) : logical;
  }
  // leaf l at an index: in the packed buffer, or (direct) in the leaf's own input or output
  std::string leaf_read(int l, bool from_in, const std::string& idx) const {
    if (!p.direct) return gread("dst", elem(l).dtype, out.leaf_words[l], idx);
    return gread(fmt::format("{}{}", from_in ? "li" : "lo", l).c_str(), elem(l).dtype, 0, idx);
  }
  std::string load_global(const std::string& arr, const std::string& pos, bool from_in = false) const {
    std::string c;
    for (int l = 0; l < k; ++l) {
      const LeafKernel* lk = from_in && computed ? computed->leaf_kernel(l) : nullptr;
      c += each(l, lk ? leaf_computed(*lk, fmt::format("{}{}", arr, l), leaf_index(l, pos, "e"))
                      : fmt::format("{}{}[e] = {};", arr, l, leaf_read(l, from_in, leaf_index(l, pos, "e"))));
    }
    return c;
  }
  // element idx of the leaf computed by its kernel (an invocation's share of the kernel's space)
  std::string leaf_computed(const LeafKernel& lk, const std::string& into, const std::string& idx) const {
    auto load = [&lk](int b, const std::string& off) {
      return load_expr(lk.kernel.inputs[b].dtype, lk.inputs[b], off);
    };
    auto store = [&into](const std::string& v) { return fmt::format("  {}[e] = {};\n", into, v); };
    return fmt::format("{{\nconst int q_ = {};\n", idx) +
           kernel_element_code(KernelCtx{lk.kernel, f64, load}, "q_", *sh, store) + "}";
  }
  // the extra operands' bindings, after the leaf outputs
  std::string extra_bindings() const {
    std::string s;
    if (!computed) return s;
    for (std::size_t i = 0; i < computed->extra.size(); ++i)
      s += fmt::format("layout(std430, set = 0, binding = {}) readonly buffer BX{} {{ {} d[]; }} in{};\n",
                       1 + 2 * k + i, i, btype(computed->extra[i].dtype), i);
    return s;
  }
  // mode 2 (direct) reads the leaf inputs, every other mode the outputs
  std::string load_level(const std::string& arr, const std::string& pos) const {
    if (!p.direct) return load_global(arr, pos);
    return "if (pc.mode == 2) {\n" + load_global(arr, pos, true) + "} else {\n" + load_global(arr, pos) + "}\n";
  }
  std::string store_global(const std::string& arr, const std::string& pos, bool read_only = false) const {
    std::string c;
    for (int l = 0; l < k; ++l) {
      if (read_only && unread && (*unread)[l]) continue;
      const std::string buf = p.direct ? fmt::format("lo{}", l) : std::string("dst");
      c += each(l, gwrite(elem(l).dtype, p.direct ? 0 : out.leaf_words[l], leaf_index(l, pos, "e"),
                          fmt::format("{}{}[e]", arr, l), buf.c_str()));
    }
    return c;
  }
  // a position's slot in workgroup memory: Ws words, leaf l's element from word sm_base[l] on
  std::string slot_base(const std::string& slot, int l) const {
    return fmt::format("({}) * {} + {}", slot, p.Ws, p.sm_base[l]);
  }
  // an element's slot in workgroup memory (mem "sm") or in the block totals (mem "tot", mode 3)
  std::string to_shared(const std::string& slot, const std::string& arr = "xa", const char* mem = "sm") const {
    std::string c;
    for (int l = 0; l < k; ++l)
      c += each(l, swrite(elem(l).dtype, slot_base(slot, l), "e", fmt::format("{}{}[e]", arr, l), mem));
    return c;
  }
  std::string from_shared(const std::string& slot, const std::string& arr = "pa", const char* mem = "sm") const {
    std::string c;
    for (int l = 0; l < k; ++l)
      c += each(l, fmt::format("{}{}[e] = {};", arr, l, sread(elem(l).dtype, slot_base(slot, l), "e", mem)));
    return c;
  }
  // xa := the inclusive combine of the workgroup's totals through this invocation's (invocations
  // where `live` holds form a prefix of the workgroup; the others only take part in the barriers)
  std::string rounds(const std::string& live = "live0") const {
    return fmt::format("for (int d = 1; d < {}; d <<= 1) {{\n", p.B) + to_shared("lid") +
           fmt::format("barrier();\nif ({} && lid >= d) {{\n", live) + from_shared("lid - d") +
           "combine_();\n}\nbarrier();\n}\n";
  }
};

// mode 1, the fix-up: one partner for the invocation's C positions (B·C is a multiple of C)
// The last fix-up (s = 1: fix-ups run top down) stores only the results read after the scan (the
// compiler drops the combine's work for the others): the B = 1024 DLM gradient's transposed
// scan, whose prefix and segment leaves (32 of 48 words) nothing reads.
// JX_VK_SKIP_UNREAD=0: every result stored (for measuring; read once).
bool skip_unread() {
  static const bool skip = !env_is_zero("JX_VK_SKIP_UNREAD");
  return skip;
}

std::string blocked_fixup(const BlockedText& t, std::int64_t C) {
  const bool skip = skip_unread();
  std::string s = fmt::format("if (pc.mode == 1) {{\nconst int S = pc.s * {};\n", t.p.B * C);
  s += "if (!live0 || j0 < S) return;\n" + t.load_global("pa", t.phys("(j0 / S) * S - 1"));
  for (std::int64_t c = 0; c < C; ++c) {
    const std::string at = fmt::format("i{}", c), all = t.store_global("xa", at), read = t.store_global("xa", at, skip);
    s += fmt::format("if (live{0} && (j{0} + 1) % S != 0) {{\n", c) + t.load_global("xa", at) + "combine_();\n" +
         (read == all ? all : "if (pc.s == 1) {\n" + read + "} else {\n" + all + "}\n") + "}\n";
  }
  return s + "return;\n}\n";
}

// mode 3, the fix-up from the block totals (BlockedPlan::c_fix; s = 1, one position per
// invocation): the first level also stored each block's total T_t (its last position's prefix)
// in `tot`, so workgroup w ≥ 1 folds P_w = T_0 ⊕ … ⊕ T_{w-1} itself (c_fix totals an invocation,
// then the workgroup's rounds) and every one of its positions j becomes P_w ⊕ x[j]. It replaces
// the top level's dispatch and its fix-up: a top level is one workgroup whose combines run in
// a row on cold code (the m = 2 filter's at N = 102400: 16 µs on the H200, the two full levels 22
// µs); here every workgroup repeats the rounds, in parallel. The totals are read from `tot`, not
// from the blocks' last positions, which the fix-up itself rewrites.
std::string blocked_fix_totals(const BlockedText& t) {
  const bool skip = skip_unread();
  const std::int64_t cf = t.p.c_fix;
  std::string s = fmt::format("if (pc.mode == 3) {{\nconst int w = m / {};\nif (w == 0) return;\n", t.p.B);
  s += fmt::format("const bool tlive = lid * {} < w;\nif (tlive) {{\n", cf) +
       t.from_shared(fmt::format("lid * {}", cf), "xa", "tot");
  for (std::int64_t c = 1; c < cf; ++c)
    s += fmt::format("if (lid * {} + {} < w) {{\n", cf, c) + t.assign("pa", "xa") +
         t.from_shared(fmt::format("lid * {} + {}", cf, c), "xa", "tot") + "combine_();\n}\n";
  s += "}\n" + t.rounds("tlive");
  s += fmt::format("if (lid == (w - 1) / {}) {{\n", cf) + t.to_shared("0") + "}\nbarrier();\n";
  s += "if (live0) {\n" + t.from_shared("0") + t.load_global("xa", "i0") + "combine_();\n" +
       t.store_global("xa", "i0", skip) + "}\nreturn;\n}\n";
  return s;
}

// mode 0 with the invocation's C elements in registers x<c>_
std::string blocked_scan_registers(const BlockedText& t, std::int64_t C) {
  std::string s;
  for (std::int64_t c = 0; c < C; ++c)
    s += fmt::format("if (live{}) {{\n", c) + t.load_level(fmt::format("x{}_", c), fmt::format("i{}", c)) + "}\n";
  for (std::int64_t c = 1; c < C; ++c)
    s += fmt::format("if (live{}) {{\n", c) + t.assign("pa", fmt::format("x{}_", c - 1)) +
         t.assign("xa", fmt::format("x{}_", c)) + "combine_();\n" + t.assign(fmt::format("x{}_", c), "xa") + "}\n";
  s += t.assign("xa", "x0_");
  for (std::int64_t c = 1; c < C; ++c)
    s += fmt::format("if (live{}) {{\n", c) + t.assign("xa", fmt::format("x{}_", c)) + "}\n";
  s += t.rounds();
  if (C == 1) {  // the inclusive total is the element's prefix
    s += "if (live0) {\n" + t.assign("x0_", "xa") + "}\n";
  } else {
    s += t.to_shared("lid") + "barrier();\nif (live0 && lid > 0) {\n" + t.from_shared("lid - 1");
    for (std::int64_t c = 0; c < C; ++c)
      s += fmt::format("if (live{}) {{\n", c) + t.assign("xa", fmt::format("x{}_", c)) + "combine_();\n" +
           t.assign(fmt::format("x{}_", c), "xa") + "}\n";
    s += "}\n";
  }
  for (std::int64_t c = 0; c < C; ++c)
    s += fmt::format("if (live{}) {{\n", c) + t.store_global(fmt::format("x{}_", c), fmt::format("i{}", c)) + "}\n";
  if (t.p.c_fix > 0)  // the block's total, for mode 3
    s += fmt::format("if (pc.s == 1 && live0 && lid == {}) {{\n", t.p.B - 1) +
         t.to_shared("m / " + std::to_string(t.p.B), "x0_", "tot") + "}\n";
  return s;
}

// One level's shader: C positions per invocation; nullopt over the driver's loop limit.
std::optional<Shader> render_blocked_level(BlockedText t, const ScanLimits& lim, const CombineText& combine,
                                           std::int64_t C, bool top) {
  Shader sh;
  t.sh = &sh;
  t.f64 = lim.f64_math;
  sh.buffers = static_cast<int>(t.p.bindings);
  const bool fix_totals = t.p.c_fix > 0 && C == 1 && !top;
  sh.name = top ? "associative_scan_top" : "associative_scan_blocked";
  sh.invocations = (t.n + C - 1) / C;  // the largest level; run_assoc dispatches fewer for the others
  sh.float64 = t.out.sh.float64;
  std::string s = glsl_header(t.p.B);
  s += "layout(std430, set = 0, binding = 0) readonly buffer BI { uint d[]; } gin;\n";
  s += leaf_bindings(t.k, t.p.direct) + t.extra_bindings();
  if (fix_totals)  // the block totals (mode 3), last
    s += fmt::format("layout(std430, set = 0, binding = {}) buffer BT {{ uint d[]; }} tot;\n", sh.buffers++) +
         "uint tot_ld(int i) { return tot.d[i]; }\nvoid tot_st(int i, uint v) { tot.d[i] = v; }\n";
  s += "layout(push_constant) uniform PC { int mode; int s; } pc;\n";
  s += shared_decl(t.p.B * t.p.Ws, lim.checked_shared);
  s += prelude(sh.float64 || lim.f64_math, lim.f64_math);
  s += t.arrays("xa") + t.arrays("pa") + t.arrays("nx");
  for (std::int64_t c = 0; c < C; ++c) s += t.arrays(fmt::format("x{}_", c));
  std::string comb;
  const std::int64_t loops = combine([&t](int buf, const std::string& off) { return t.read(buf, off); }, sh, comb);
  for (int l = 0; l < t.k; ++l) comb += t.each(l, fmt::format("nx{}[e] = {};", l, t.read(t.ap.body.outputs[l], "e")));
  s += "void combine_() {\n" + comb + t.assign("xa", "nx") + "}\n";
  s += fmt::format(
      "void main() {{\nconst int m = int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * {}u + "
      "gl_LocalInvocationIndex);\n"
      "const int lid = int(gl_LocalInvocationIndex);\n",
      t.p.B);
  for (std::int64_t c = 0; c < C; ++c)
    s += fmt::format(
        "const int j{0} = pc.s * ({1} * m + {0}) + pc.s - 1;\nconst bool live{0} = j{0} < {2};\nconst int i{0} = "
        "{3};\n",
        c, C, t.n, t.phys(fmt::format("j{}", c)));
  s += (fix_totals ? blocked_fix_totals(t) : std::string()) + blocked_fixup(t, C) + blocked_scan_registers(t, C);
  sh.glsl = s + "}\n";
  const std::int64_t per_combine = loops + 3 * t.p.regs;
  const std::int64_t fix_combines = fix_totals ? t.p.c_fix + 10 : 0;
  if (lim.max_loop_iterations > 0 &&
      per_combine * (2 * C + 9 + fix_combines) + 8 * t.p.regs * (C + fix_combines) > lim.max_loop_iterations)
    return std::nullopt;
  return sh;
}

// The fix-up from the block totals (mode 3) where the positions are more than a top level takes
// in one workgroup (B·c_max; fewer: one dispatch) and leave at most B·kFixTotals + 1 blocks (the
// m = 2 filter at N = 102400: 400). JX_VK_FIX_TOTALS=0: the top level and fix-ups (read at
// every plan, part of its key: for measuring and for the tests of both). Single series only: per
// series at B = 1024 (each series its totals) it was slower, the GPU full and the fold repeated
// work (2026-11-29-h200-fix-totals-ab/series: the gradient 1.42 -> 1.54 ms).
constexpr std::int64_t kFixTotals = 4;
bool fix_from_totals() { return !env_is_zero("JX_VK_FIX_TOTALS"); }

// outer: the program jit planned (`ap` itself, or a vmapped scan's batched program): its leaf
// kernels, which the first level computes, and its unread results, which the last fix-up leaves.
// With leaf kernels none is rendered where it cannot compute them (leaves packed, bindings over the
// budget, fewer than 2 positions: the outputs would be copies of the inputs).
void render_blocked(const AssocProgram& ap, const ScanLimits& lim, AssocShader& out, const LeafIndexFn& leaf_index,
                    const CombineText& combine, bool many = false, const AssocProgram* outer = nullptr) {
  const std::optional<BlockedPlan> p = plan_blocked(ap, lim, many);
  if (!p) return;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  const std::int64_t n = ap.operands[nc].shape[ap.axis];
  const AssocProgram* computed = outer && !outer->leaf_kernels.empty() ? outer : nullptr;
  const std::vector<bool>* unread = outer && static_cast<int>(outer->unread.size()) == k ? &outer->unread : nullptr;
  BlockedPlan q = *p;
  q.bindings = p->direct ? 1 + 2 * k + (computed ? static_cast<std::int64_t>(computed->extra.size()) : 0) : 2;
  if (computed && (!p->direct || n < 2 || q.bindings > lim.max_buffers)) return;
  const std::int64_t blocks = (n + p->B - 1) / p->B;
  if (fix_from_totals() && out.series == 0 && n > p->B * p->c_max && blocks - 1 <= p->B * kFixTotals &&
      q.bindings < lim.max_buffers)
    q.c_fix = (blocks - 1 + p->B - 1) / p->B;
  BlockedText t{ap, q, out, leaf_index, nc, k, n, computed, unread};
  out.blocked = render_blocked_level(t, lim, combine, 1, false);
  out.direct = p->direct;
  out.block = out.top_block = p->B;
  if (out.blocked && q.c_fix > 0) {
    out.fix_totals = q.c_fix;
    out.totals_bytes = blocks * q.Ws * 4;
    return;  // no top level
  }
  if (out.blocked && (p->c_top > 1 || p->B_top != p->B)) {
    BlockedPlan top = q;  // the top level in a workgroup of its own size (q.c_fix is 0 here)
    top.B = p->B_top;
    out.blocked_top = render_blocked_level(BlockedText{ap, top, out, leaf_index, nc, k, n, computed, unread}, lim,
                                           combine, p->c_top, true);
    if (out.blocked_top) out.top_per_invocation = p->c_top, out.top_block = p->B_top;
  }
}

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
  AssocProgram u{S.body, ncu, ua, ap.reverse, {}, nullptr, {}, {}};  // one series' operands
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
