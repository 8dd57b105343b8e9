// The blocked associative scan's shaders (glsl_assoc_scan.cc chooses the form; glsl_assoc_blocked.h).
//
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
#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_assoc_blocked.h"
#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_words.h"

namespace jx::vk {

constexpr std::int64_t kUnrollMax = 64;
std::string element_loop(std::int64_t count) {
  return fmt::format("{}for (int e = 0; e < {}; ++e) ", unroll_loops() && count <= kUnrollMax ? "[[unroll]] " : "",
                     count);
}

namespace {

// The small workgroups of many series at once (kManySeries): one position per invocation.
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

}  // namespace

// outer: the program jit planned (`ap` itself, or a vmapped scan's batched program): its leaf
// kernels, which the first level computes, and its unread results, which the last fix-up leaves.
// With leaf kernels none is rendered where it cannot compute them (leaves packed, bindings over the
// budget, fewer than 2 positions: the outputs would be copies of the inputs).
void render_blocked(const AssocProgram& ap, const ScanLimits& lim, AssocShader& out, const LeafIndexFn& leaf_index,
                    const CombineText& combine, bool many, const AssocProgram* outer) {
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

}  // namespace jx::vk
