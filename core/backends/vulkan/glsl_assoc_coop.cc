// The cooperative associative scan: elements too large for the blocked scan (glsl_assoc_blocked.cc)
// are combined by a whole workgroup at once, an invocation per element (a matrix entry, a series
// of a batch), a linear-algebra step's matrices worked on by the workgroup together (glsl_linalg:
// linalg_workgroup_code), the combine's buffers in workgroup memory (the largest in a
// per-workgroup slice of global scratch where they overflow).
//
// Levels as in the blocked scan, with K = `chunk` positions per workgroup: at stride s the level's
// positions are j = s·p + s − 1 (p = 0 .. n/s − 1, logical order; mirrored for reverse).
//   mode 0 (scan): workgroup g takes positions p ∈ [gK, gK + K) in turn, x[j_p] := x[j_{p−1}] ⊕ x[j_p]
//     with the running total kept in its memory, so each holds the combine of its chunk up to it.
//   mode 1 (fix-up): every j outside the first superchunk (S = K·s positions) and not the last of
//     its own becomes x[q] ⊕ x[j], q the last position of the previous superchunk (its full prefix).
// run_assoc scans up s = 1, K, K², ... (vk_scan_exec.cc: blocked_levels) until a level has at most
// K positions, then fixes up the levels below top down. Work: ~2n combines; n/K workgroups in flight
// at the first level, each combine's latency that of its steps (a barrier between dependent steps).
// A dispatch has at most max_groups workgroups; each loops over its share of the level. On GPUs
// (the split loops) the next position's leaves are fetched into registers before a combine and
// stored into workgroup memory after it, so the global-memory latency overlaps the combine (H200,
// N = 102400: the m = 13 filter 10.16 -> 9.42 ms, m = 8 2.48 -> 2.25 ms; JX_VK_COOP_PREFETCH=0:
// not, for measuring).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <set>
#include <cstdlib>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_scan.h"
#include "core/base/env.h"
#include "core/backends/vulkan/glsl_words.h"
#include "core/backends/vulkan/glsl_workgroup.h"

namespace jx::vk {
namespace {

// Where the combine's buffers live. Body buffers: constants | left leaves (the running total
// or x[q]) | right leaves (x[j]) | temporaries; then, where an output is one of the body's own
// inputs, k staging buffers (the results are copied out of the way before the inputs change).
struct CoopLayout {
  std::vector<Loc> loc;
  bool staged = false;
  std::int64_t smem = 0, scratch = 0;  // words of workgroup memory / of the workgroup's scratch
  std::int64_t wg = kWorkgroup;
};

// Where the leaves live in global memory: packed into one buffer `dst` at layout.leaf_words (run_assoc
// copies them in and out), or (direct) each leaf in its own input li<l> and output lo<l>: the first
// level (mode 2, mode 0 otherwise) reads the inputs and writes every position's prefix to the
// outputs, and every other dispatch reads and writes the outputs in place. On the H200 the copies
// took 0.52 ms of the m = 13 filter's 6.5 ms at N = 102400 each way (the pack before the scan, the
// unpack after), twice that in the smoother (JX_VK_COOP_DIRECT=0: packed, for measuring).
struct LeafBuffers {
  const AssocShader& layout;
  bool direct = false;
  // `into` = leaf l's element at index idx (a statement)
  std::string read(int l, DType d, const std::string& idx, const std::string& into) const {
    if (!direct) return fmt::format("{} = {};\n", into, gread("dst", d, layout.leaf_words[l], idx));
    const std::string in = fmt::format("li{}", l), out = fmt::format("lo{}", l);
    return fmt::format("if (pc.mode == 2) {{\n{0} = {1};\n}} else {{\n{0} = {2};\n}}\n", into,
                       gread(in.c_str(), d, 0, idx), gread(out.c_str(), d, 0, idx));
  }
  std::string write(int l, DType d, const std::string& idx, const std::string& v) const {
    if (!direct) return gwrite(d, layout.leaf_words[l], idx, v, "dst");
    const std::string out = fmt::format("lo{}", l);
    return gwrite(d, 0, idx, v, out.c_str());
  }
};

// When a buffer's words are in use, in barrier epochs of the combine (step_epochs): a temporary from
// the epoch of the step that writes it to that of its last reader, anything else (the leaves, the
// staging buffers, the combine's results) throughout. Buffers whose lives do not meet share words
// (JX_VK_COOP_REUSE=0: none do, for measuring): the m = 13 gradient's transposed combine has ~60
// temporary 13 × 13 matrices, few of them alive at once.
struct Life {
  int from = 0, to = INT_MAX;
  bool meets(const Life& o) const { return from <= o.to && o.from <= to; }
};
std::vector<Life> buffer_lives(const Program& b, int count, int first_temporary) {
  std::vector<Life> life(count);
  if (env_is_zero("JX_VK_COOP_REUSE")) return life;
  const std::vector<int> epoch = step_epochs(b, false);
  std::vector<int> written(count, -1), first_read(count, INT_MAX), last_read(count, -1);
  for (std::size_t s = 0; s < b.steps.size(); ++s) {
    if (epoch[s] < 0) continue;
    for (int o : b.steps[s].out) written[o] = epoch[s];
    for (int i : b.steps[s].in) {
      first_read[i] = std::min(first_read[i], epoch[s]);
      last_read[i] = std::max(last_read[i], epoch[s]);
    }
  }
  const std::set<int> results(b.outputs.begin(), b.outputs.end());
  for (int i = first_temporary; i < static_cast<int>(b.buffers.size()) && i < count; ++i) {
    if (results.count(i)) continue;
    const int from = written[i] >= 0 ? written[i] : first_read[i] < INT_MAX ? first_read[i] : 0;
    life[i] = Life{from, std::max(from, last_read[i])};
  }
  return life;
}

CoopLayout coop_layout(const AssocProgram& ap, const AssocShader& layout, std::int64_t shared_words_max) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  const int nbuf = static_cast<int>(b.buffers.size());
  CoopLayout L;
  for (int o : b.outputs) L.staged = L.staged || o < nc + 2 * k;
  L.loc.resize(nbuf + (L.staged ? k : 0));
  for (int i = 0; i < nc; ++i) L.loc[i] = {Home::global_in, layout.const_words[i], b.buffers[i]};
  std::vector<int> order;  // kept in workgroup memory first: leaves, staging, small temporaries
  for (int i = nc; i < static_cast<int>(L.loc.size()); ++i) {
    L.loc[i].aval = i < nbuf ? b.buffers[i] : b.buffers[nc + (i - nbuf)];
    order.push_back(i);
  }
  auto rank = [&](int i) { return i < nc + 2 * k ? 0 : i >= nbuf ? 1 : 2; };
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    return shared_words(L.loc[x].aval) < shared_words(L.loc[y].aval);
  });
  const std::vector<Life> life = buffer_lives(b, static_cast<int>(L.loc.size()), nc + 2 * k);
  std::vector<int> placed;
  // the lowest words from `lo` (below `cap`) that no placed buffer of home h whose life meets i's holds
  auto first_fit = [&](Home h, std::int64_t lo, std::int64_t cap, int i, std::int64_t w) -> std::int64_t {
    std::vector<std::pair<std::int64_t, std::int64_t>> taken;
    for (int j : placed)
      if (L.loc[j].home == h && life[j].meets(life[i]))
        taken.emplace_back(L.loc[j].base, L.loc[j].base + shared_words(L.loc[j].aval));
    std::sort(taken.begin(), taken.end());
    std::int64_t at = lo;
    for (const auto& [from, to] : taken) {
      if (at + w <= from) break;
      at = std::max(at, to);
    }
    return at + w <= cap ? at : -1;
  };
  std::int64_t widest = 1;
  for (int i : order) {
    const std::int64_t w = shared_words(L.loc[i].aval);
    widest = std::max(widest, L.loc[i].aval.size());
    const std::int64_t at = first_fit(Home::shared, 0, shared_words_max, i, w);
    const bool shared = at >= 0;
    L.loc[i].home = shared ? Home::shared : Home::scratch;
    L.loc[i].base = shared ? at : first_fit(Home::scratch, 0, INT64_MAX, i, w);
    std::int64_t& end = shared ? L.smem : L.scratch;  // words of the home in use
    end = std::max(end, L.loc[i].base + w);
    placed.push_back(i);
  }
  // an invocation per element of the widest buffer, or per entry of the lus factored together, in
  // whole warps of 32, 32 to 256 (JX_VK_COOP_WG overrides, up to 1024 where the device allows it): no
  // idle warps, so more workgroups fit a multiprocessor. H200, m = 13 (169 entries) at N = 102400,
  // 192 against 256 invocations: filter 10.10 against 10.55 ms, smoother 12.83 against 13.34 ms
  // (bench/results/2026-11-27-h200-coop-wg); the gradient's transposed combine (two 13 × 13 lus
  // factored together): see bench/results/2026-11-28-h200-coop-wg-lus
  const std::int64_t want =
      std::max<std::int64_t>(widest, env_is_zero("JX_VK_COOP_WG_LUS") ? 0 : together_lu_entries(ap.body));
  const std::int64_t wg = std::min<std::int64_t>(std::max<std::int64_t>(32, (want + 31) / 32 * 32), kWorkgroup);
  L.wg = std::clamp<std::int64_t>(env_int("JX_VK_COOP_WG", wg), 1, 1024);
  return L;
}

// The shader's functions: load_(lid, side, i) fills the left (side 0) or right (1) leaves from
// physical position i; combine_(lid) runs the combine's steps; commit_(lid, i, keep) stores the
// results at position i and, with keep, makes them the left leaves (the running total).
std::string coop_functions(const AssocProgram& ap, const LeafBuffers& leaves, const CoopLayout& L,
                           const LeafIndexFn& leaf_index, const std::string& barrier, const ScanLimits& lim, Shader& sh,
                           std::int64_t& per_combine, int& step_barriers) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  const int nbuf = static_cast<int>(b.buffers.size());
  auto strided = [&](std::int64_t m, const std::string& body) { return strided_loop(m, body, false, L.wg); };
  auto iterations = [&](std::int64_t m) { return loop_iterations(m, false, L.wg); };
  std::string s = "void load_(int lid, int side, int i) {\n";
  for (int l = 0; l < k; ++l) {
    const AVal& e = b.buffers[nc + l];
    const std::string idx = leaf_index(l, "i", "e");
    const std::string v = fmt::format("{} v_;\n", gtype(e.dtype)) + leaves.read(l, e.dtype, idx, "v_");
    // mode 2 (direct): a chunk's first position, the running total's start, is its own prefix
    const std::string first =
        leaves.direct ? "if (pc.mode == 2) {\n" + leaves.write(l, e.dtype, idx, "v_") + "}\n" : "";
    s += "if (side == 0) {\n" + strided(e.size(), v + write_loc(L.loc[nc + l], nc + l, "e", "v_") + first) +
         "} else {\n" + strided(e.size(), v + write_loc(L.loc[nc + k + l], nc + k + l, "e", "v_")) + "}\n";
    per_combine += 2 * iterations(e.size());
  }
  s += "}\nvoid combine_(int lid) {\n";
  const WorkgroupSteps steps = workgroup_steps(b, L.loc, false, L.wg, barrier, lim.f64_math, sh);
  s += steps.code + "}\nvoid commit_(int lid, int i, bool keep) {\n";
  per_combine += steps.iterations;
  step_barriers = steps.barriers;
  std::vector<int> from(k);  // where leaf l's result is read from at the store
  for (int l = 0; l < k; ++l) {
    from[l] = b.outputs[l];
    if (!L.staged) continue;
    const AVal& e = b.buffers[nc + l];
    s += strided(e.size(), write_loc(L.loc[nbuf + l], nbuf + l, "e", read_loc(L.loc[from[l]], from[l], "e")));
    per_combine += iterations(e.size());
    from[l] = nbuf + l;
  }
  if (L.staged) s += barrier;
  for (int l = 0; l < k; ++l) {
    const AVal& e = b.buffers[nc + l];
    const std::string v = read_loc(L.loc[from[l]], from[l], "e");
    s += strided(e.size(), fmt::format("{} v_ = {};\n", gtype(e.dtype), v) +
                               leaves.write(l, e.dtype, leaf_index(l, "i", "e"), "v_") + "if (keep) {\n" +
                               write_loc(L.loc[nc + l], nc + l, "e", "v_") + "}\n");
    per_combine += iterations(e.size());
  }
  return s + "}\n";
}

// Leaves fetched ahead (the split loops): fetchS_(lid, i) loads side S's leaves of position i
// into the invocation's registers nxS_l_ (element e = lid + t·wg in nxS_l_[t]) and stashS_(lid)
// stores them as that side's leaves in workgroup memory. A fetch is issued before the combine
// before it and stored after, so its global-memory latency overlaps that combine. "" where a side
// would take over kPrefetchWords registers per invocation.
constexpr std::int64_t kPrefetchWords = 16;
std::string coop_prefetch(const AssocProgram& ap, const LeafBuffers& leaves, const CoopLayout& L,
                          const LeafIndexFn& leaf_index) {
  const Program& b = ap.body;
  const int nc = ap.num_consts, k = static_cast<int>(ap.operands.size()) - nc;
  std::int64_t words = 0;
  for (int l = 0; l < k; ++l) words += (b.buffers[nc + l].size() + L.wg - 1) / L.wg;
  if (words > kPrefetchWords) return "";
  std::string decl, s;
  for (int side = 0; side < 2; ++side) {
    std::string fetch = fmt::format("void fetch{}_(int lid, int i) {{\n", side);
    std::string stash = fmt::format("void stash{}_(int lid) {{\n", side);
    for (int l = 0; l < k; ++l) {
      const AVal& e = b.buffers[nc + l];
      const std::int64_t T = (e.size() + L.wg - 1) / L.wg;
      const std::string reg = fmt::format("nx{}_{}_", side, l);
      const int buf = nc + side * k + l;
      decl += fmt::format("{} {}[{}];\n", gtype(e.dtype), reg, T);
      for (std::int64_t t = 0; t < T; ++t) {
        const std::string at = fmt::format("{{\nconst int e = lid + {};\nif (e < {}) ", t * L.wg, e.size());
        fetch += at + leaves.read(l, e.dtype, leaf_index(l, "i", "e"), fmt::format("{}[{}]", reg, t)) + "}\n";
        stash += at + "{\n" + write_loc(L.loc[buf], buf, "e", fmt::format("{}[{}]", reg, t)) + "}\n}\n";
      }
    }
    s += fetch + "}\n" + stash + "}\n";
  }
  // mode 1's next position from p on: the first whose j is neither in the first superchunk nor
  // the last of its own
  s += "int fix_next_(int p, int G, int count, int S) {\nfor (; p < count; p += G) {\n"
       "const int j = pc.s * p + pc.s - 1;\nif (j >= S && (j + 1) % S != 0) break;\n}\nreturn p;\n}\n";
  return decl + s;
}

// The workgroup's share of a level as written into main(): physical position i from logical
// position p (mirrored for reverse).
struct CoopMain {
  std::int64_t n, K;
  bool reverse;
  std::string phys(const std::string& logical) const {
    return reverse ? fmt::format("({} - 1 - ({}))", n, logical) : "(" + logical + ")";
  }
};

// The mode 0 and mode 1 loops of the header comment, each with its own calls of load_, combine_
// and commit_ (on the H200 the m = 13 filter, smoother and gradient took 5-6% less time this way
// than with the merged loop). `ahead`: the right leaves (mode 0) or both sides (mode 1) fetched
// one position ahead (coop_prefetch; fix_next_ skips the positions mode 1 leaves alone). Storing
// the fetched leaves right after the commit, with one barrier fewer a combine, measured the same.
std::string coop_loops_split(const CoopMain& M, const std::string& barrier, bool ahead) {
  auto pos = [&](const std::string& p) { return M.phys(fmt::format("pc.s * ({}) + pc.s - 1", p)); };
  std::string s = fmt::format("if (pc.mode != 1) {{\nfor (int g = g0; g < (count + {0} - 1) / {0}; g += G) {{\n", M.K);
  s += fmt::format("const int p0 = g * {};\nload_(lid, 0, ", M.K) + pos("p0") + ");\n";
  if (ahead) s += "if (p0 + 1 < count) fetch1_(lid, " + pos("p0 + 1") + ");\n";
  s += fmt::format("for (int c = 1; c < {} && p0 + c < count; ++c) {{\nconst int i = ", M.K) + pos("p0 + c") + ";\n";
  if (ahead)
    s += "stash1_(lid);\n" + barrier + fmt::format("if (c + 1 < {} && p0 + c + 1 < count) fetch1_(lid, ", M.K) +
         pos("p0 + c + 1") + ");\n";
  else
    s += "load_(lid, 1, i);\n" + barrier;
  s += "combine_(lid);\n" + barrier + "commit_(lid, i, true);\n" + barrier + "}\n}\n} else {\n";
  auto j_of = [](const std::string& p) { return fmt::format("(pc.s * ({}) + pc.s - 1)", p); };
  // side 0 from q, the last position of the superchunk before j's; side 1 from j ({0}: side, {1}: position)
  auto both = [&](const char* call, const std::string& j) {
    return fmt::format(fmt::runtime(call), 0, M.phys(fmt::format("({} / S) * S - 1", j))) +
           fmt::format(fmt::runtime(call), 1, M.phys(j));
  };
  const std::string tail = "combine_(lid);\n" + barrier + "commit_(lid, " + M.phys("j") + ", false);\n" + barrier;
  if (!ahead)
    return s + "for (int p = g0; p < count; p += G) {\nconst int j = pc.s * p + pc.s - 1;\n" +
           "if (j < S || (j + 1) % S == 0) continue;\n" + both("load_(lid, {0}, {1});\n", "j") + barrier + tail +
           "}\n}\n";
  s += "int p = fix_next_(g0, G, count, S);\nif (p < count) {\n" + both("fetch{0}_(lid, {1});\n", j_of("p")) + "}\n";
  s += "while (p < count) {\nconst int j = pc.s * p + pc.s - 1;\nstash0_(lid);\nstash1_(lid);\n" + barrier;
  s += "const int pn = fix_next_(p + G, G, count, S);\nif (pn < count) {\n" +
       both("fetch{0}_(lid, {1});\n", j_of("pn")) + "}\n";
  return s + tail + "p = pn;\n}\n}\n";
}

// The same as one loop, so that load_, combine_ and commit_ each have one call site: llvmpipe
// compiles a shader with barriers as a coroutine, at a cost that grows faster than its inlined
// size (the m = 13 gradient's transposed scan at N = 512: 104 s cold with the split loops, 38 s
// merged). mode 0: chunk g, its position c (c = 0: the chunk's first position is loaded as the
// running total); mode 1: position p. Every branch depends on the workgroup only (uniform).
std::string coop_loops_merged(const CoopMain& M, const std::string& barrier) {
  std::string s = fmt::format("const int chunks = (count + {0} - 1) / {0};\n", M.K);
  s += "int g = g0, c = 0, p = g0;\nfor (;;) {\nint i;\nbool keep;\nif (pc.mode != 1) {\n";
  s += "if (c == 0) {\nif (g >= chunks) break;\nload_(lid, 0, " +
       M.phys(fmt::format("pc.s * (g * {}) + pc.s - 1", M.K)) + ");\nc = 1;\n}\n";
  s += fmt::format("if (c >= {0} || g * {0} + c >= count) {{\ng += G;\nc = 0;\ncontinue;\n}}\n", M.K);
  s += "i = " + M.phys(fmt::format("pc.s * (g * {} + c) + pc.s - 1", M.K)) + ";\nkeep = true;\n++c;\n";
  s += "} else {\nif (p >= count) break;\nconst int j = pc.s * p + pc.s - 1;\np += G;\n";
  s += "if (j < S || (j + 1) % S == 0) continue;\n";
  s += "load_(lid, 0, " + M.phys("(j / S) * S - 1") + ");\ni = " + M.phys("j") + ";\nkeep = false;\n}\n";
  s += "load_(lid, 1, i);\n" + barrier + "combine_(lid);\n" + barrier + "commit_(lid, i, keep);\n" + barrier;
  return s + "}\n";
}

// main(): the workgroup's share of the level, split loops on GPUs, merged where barriers are
// costly (llvmpipe).
std::string coop_main(const AssocProgram& ap, std::int64_t K, const CoopLayout& L, const std::string& barrier,
                      bool merged, bool prefetch) {
  const CoopMain M{ap.operands[ap.num_consts].shape[ap.axis], K, ap.reverse};
  std::string s = "void main() {\nconst int lid = int(gl_LocalInvocationIndex);\n";
  s += "const int G = int(gl_NumWorkGroups.x), g0 = int(gl_WorkGroupID.x);\n";
  if (L.scratch) s += fmt::format("sb = g0 * {};\n", L.scratch);
  s += fmt::format("const int count = {} / pc.s, S = pc.s * {};\n", M.n, K);
  s += merged ? coop_loops_merged(M, barrier) : coop_loops_split(M, barrier, prefetch);
  return s + "}\n";
}

// Positions a workgroup combines in turn at one level, K. A level's critical path is K combines in
// a row, and there are ~log_K n levels up and as many fix-ups down: a smaller K shortens the path
// while the first level still has workgroups enough to fill the device. H200, the m = 13 DLM,
// GPU time per call at K = 16 / 8 / 4: N = 1600 par filter 0.704 / 0.575 / 0.544 ms, par grad
// 3.37 / 3.02 / 2.88 ms; N = 102400 par filter 11.90 / 11.70 / 11.81 ms. So 8 from 8192 positions
// (1024 workgroups at the first level), 4 below.
std::int64_t coop_chunk(std::int64_t n) { return n >= 8192 ? 8 : 4; }

}  // namespace

std::optional<AssocShader::Coop> render_coop_assoc(const AssocProgram& ap, const ScanLimits& lim,
                                                   const AssocShader& layout, const LeafIndexFn& leaf_index,
                                                   std::string& why) {
  const std::int64_t n = ap.operands[ap.num_consts].shape[ap.axis];
  const CoopLayout L = coop_layout(ap, layout, lim.shared_bytes / 4);
  AssocShader::Coop out;
  out.wg = L.wg;
  out.scratch_words = L.scratch;
  // a workgroup per chunk or position where the scratch allows (at most 64 MiB of it)
  out.max_groups = std::clamp<std::int64_t>(L.scratch ? (std::int64_t{1} << 24) / L.scratch : 65535, 1, 65535);
  // a spilled buffer's writes reach the workgroup's other invocations through buffer memory
  const std::string barrier = L.scratch ? "memoryBarrierBuffer();\nbarrier();\n" : "barrier();\n";
  const int k = static_cast<int>(ap.operands.size()) - ap.num_consts;
  const int scratch_binding = 1 + (L.scratch ? 1 : 0);
  out.direct = 2 * k + scratch_binding <= lim.max_buffers && !env_is_zero("JX_VK_COOP_DIRECT");
  const LeafBuffers leaves{layout, out.direct};
  Shader& sh = out.sh;
  sh.name = "associative_scan_coop";
  sh.buffers = (out.direct ? 2 * k : 1) + scratch_binding;
  std::vector<KNode> nodes;
  for (const Kernel& kk : ap.body.kernels) nodes.insert(nodes.end(), kk.nodes.begin(), kk.nodes.end());
  sh.float64 = uses_double(ap.operands, DType::float32, nodes);
  std::string s = glsl_header(L.wg);
  s += "layout(std430, set = 0, binding = 0) readonly buffer BI { uint d[]; } gin;\n";
  s += leaf_bindings(k, out.direct);
  if (L.scratch)
    s += fmt::format("layout(std430, set = 0, binding = {}) coherent buffer BS {{ uint d[]; }} scr;\nint sb = 0;\n",
                     sh.buffers - 1) +
         "uint sc_ld(int i) { return scr.d[sb + i]; }\nvoid sc_st(int i, uint v) { scr.d[sb + i] = v; }\n";
  s += "layout(push_constant) uniform PC { int mode; int s; } pc;\n";
  if (L.smem) s += shared_decl(L.smem, lim.checked_shared);
  s += prelude(sh.float64 || lim.f64_math, lim.f64_math);
  std::int64_t per_combine = 3;
  int step_barriers = 0;
  s += coop_functions(ap, leaves, L, leaf_index, barrier, lim, sh, per_combine, step_barriers);
  // positions per workgroup in turn (JX_VK_COOP_CHUNK overrides); fewer where llvmpipe's loop
  // limit counts the iterations of a chunk's combines, more workgroups where it counts a share's
  std::int64_t K = std::max<std::int64_t>(2, env_int("JX_VK_COOP_CHUNK", coop_chunk(n)));
  if (lim.max_loop_iterations > 0) {
    while (K > 2 && K * per_combine > lim.max_loop_iterations) K /= 2;
    const std::int64_t groups_needed = (n * per_combine + lim.max_loop_iterations - 1) / lim.max_loop_iterations;
    if (K * per_combine > lim.max_loop_iterations || groups_needed > out.max_groups) {
      why = fmt::format("a combine runs {} loop iterations per invocation; {} positions exceed the driver's {}",
                        per_combine, n, lim.max_loop_iterations);
      return std::nullopt;
    }
  }
  out.chunk = K;
  const char* loops = std::getenv("JX_VK_COOP_LOOPS");  // split | merged (default: merged where barriers are costly)
  const bool merged = loops && *loops ? std::string(loops) == "merged" : lim.costly_barriers;
  // fetched ahead in the split loops (JX_VK_COOP_PREFETCH=0: not, for measuring)
  const std::string ahead =
      merged || env_is_zero("JX_VK_COOP_PREFETCH") ? "" : coop_prefetch(ap, leaves, L, leaf_index);
  sh.glsl = s + ahead + coop_main(ap, K, L, barrier, merged, !ahead.empty());
  sh.invocations = L.wg;
  out.mode = fmt::format(
      "cooperative: a workgroup of {} invocations per combine ({} barriers between its steps), {} positions in "
      "turn per workgroup, {} bytes of workgroup memory{}",
      L.wg, step_barriers, K, L.smem * 4,
      L.scratch ? fmt::format(", {} bytes of scratch per workgroup", L.scratch * 4) : "");
  return out;
}

}  // namespace jx::vk
