// Short reductions on a GPU in other shapes than an invocation per output: a tile of outputs
// per invocation (batched products of small matrices) and lanes per output (mid-size sums over
// few outputs). glsl_renderer.cc renders through kernel_invocation_code.
#include <algorithm>
#include <atomic>
#include <fmt/format.h>

#include "core/backends/vulkan/glsl_parts.h"
#include "core/base/env.h"

namespace jx::vk {

// ---- lanes per output ------------------------------------------------------------------------
// A reduction of kLanesReduceMin to kWorkgroupReduceMin terms per output over too few outputs to
// fill the GPU (fewer than tile_floor()) gives each output kLanes invocations: lane l folds terms
// l, l + kLanes, ..., then the lanes' partials fold in a fixed tree in workgroup memory
// (deterministic). One invocation per output ran its terms one after another: on the H200 a sum
// of 256 terms (an index computation each) over 102400 outputs took 1.3 ms. A shorter sum (4 to
// kLanesReduceMin terms) whose terms are expensive, terms × the body's nodes >= lanes_work(),
// gets lanes too: the power of two >= its terms (at most kLanes), one term per lane. llvmpipe
// (floor 0) keeps an invocation per output: its invocations are a CPU's few threads.
// JX_VK_LANES=0: an invocation per output everywhere; JX_VK_LANES_WORK=<n>: another work bound
// (for measuring).
constexpr std::int64_t kLanes = 32;
constexpr std::int64_t kLanesReduceMin = 128;
constexpr std::int64_t kLanesShortMin = 4;

std::atomic<std::int64_t> g_tile_floor{1 << 18};  // set_tile_floor

std::int64_t lanes_work() {
  static const std::int64_t w = env_int("JX_VK_LANES_WORK", 2048);
  return w;
}

// Lanes per output of a lanes reduction; 0 for any other kernel.
std::int64_t reduction_lanes(const Kernel& k) {
  static const bool on = !env_is_zero("JX_VK_LANES");
  if (!on || !k.is_reduction() || k.out.size() == 0 || k.out.size() >= tile_floor()) return 0;
  const std::int64_t r = reduced_elements(k);
  if (r >= kLanesReduceMin && r < kWorkgroupReduceMin) return kLanes;
  if (r < kLanesShortMin || r >= kLanesReduceMin) return 0;
  if (r * static_cast<std::int64_t>(k.reachable(k.body).size()) < lanes_work()) return 0;
  std::int64_t lanes = 1;
  while (lanes < r && lanes < kLanes) lanes *= 2;
  return lanes;
}

// The workgroup array `red` that the lanes' partials fold in.
std::string lanes_shared(const Kernel& k, bool f64_math, const std::string& red) {
  return fmt::format("shared {} {}[{}];\n", accumulator_type(k, f64_math), red, kWorkgroup);
}

namespace {

// Whole workgroups: every invocation reaches the barriers (lanes past the last output fold
// nothing), and in a group of kernels each workgroup runs one member's code.
std::int64_t lanes_invocations(const Kernel& k, std::int64_t lanes) {
  return (k.out.size() * lanes + kWorkgroup - 1) / kWorkgroup * kWorkgroup;
}

// Invocation `elem` (of lanes_invocations): lane elem % L of output elem / L (L = lanes: a power
// of two dividing kWorkgroup, so an output's lanes share a workgroup).
std::string lanes_code(const KernelCtx& c, std::int64_t lanes, const std::string& elem, const std::string& red,
                       const std::string& buf) {
  const Kernel& k = c.k;
  const std::int64_t reduced = reduced_elements(k), outs = k.out.size();
  const std::string at = accumulator_type(k, c.f64);
  std::string s = fmt::format(
      "  const int lid = int(gl_LocalInvocationIndex);\n  const int l_ = lid % {0};\n  const int o_ = ({2}) / {0};\n"
      "  const bool live_ = o_ < {1};\n",
      lanes, outs, elem);
  const SpaceSplit sp = split_space(k);
  s += strided_terms(c, sp, at, fmt::format("min(o_, {})", outs - 1), fmt::format("live_ ? l_ : {}", reduced), lanes);
  s += tree_fold(k, at, red, "l_", lanes / 2, 1);
  s += fmt::format("  if (l_ != 0 || !live_) return;\n  acc = {}[lid];\n", red);
  return s + reduction_finish(c, sp.idx, [&](const std::string& v) { return store_code(k.out.dtype, "o_", v, buf); });
}

// ---- a tile of outputs per invocation ----------------------------------------------------------
// A batched product of small matrices, C[.., i, j] = Σ_k A[.., i, k] · B[.., k, j], is a short
// reduction whose loads each skip one of its two innermost output dims. One invocation per output
// reads 2 values per term; one per ti × tj tile of outputs reads ti + tj values for its ti · tj
// products (4 × 4: 8 loads for 16, not 32), and each output still sums its terms in the same
// order (the same values, bit for bit). Tile extents divide the dims' extents (glsl_parts.h: Tile).
// Per node: bit 0 set when its value depends on dim di's coordinate, bit 1 on dj's.
std::vector<int> tile_deps(const Kernel& k, const Tile& t) {
  std::vector<int> m(k.nodes.size(), 0);
  auto bit = [&](std::size_t d) {
    return (static_cast<int>(d) == t.di ? 1 : 0) | (static_cast<int>(d) == t.dj ? 2 : 0);
  };
  for (std::size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode& n = k.nodes[i];
    if (n.kind == KNodeKind::load) {
      const KLoad& l = k.loads[n.load];
      if (l.indexed) m[i] = m[n.a];
      for (std::size_t d = 0; d < l.strides.size() && !l.indexed; ++d)
        if (l.strides[d] != 0) m[i] |= bit(d);
    } else if (n.kind == KNodeKind::iota) {
      m[i] = bit(n.dim);
    } else if (n.kind == KNodeKind::reduce_result) {
      m[i] = 3;
    } else if (n.kind == KNodeKind::alu) {
      for (int o : {n.a, n.b, n.c})
        if (o >= 0) m[i] |= m[o];
    }
  }
  return m;
}

// The largest tile extent of at most `cap` that divides e (16 -> 4, 6 -> 3, 13 -> 1). Tiles past
// the edge cost more than they saved: on the H200, 4 × 4 tiles of 13 × 13 products (16 × 16 of
// work, clamped coordinates) made the m = 13 gradient's products 5-25% slower.
std::int64_t tile_extent(std::int64_t e, std::int64_t cap) {
  for (std::int64_t t = std::min(cap, e); t >= 2; --t)
    if (e % t == 0) return t;
  return 1;
}

std::int64_t tiles_along(const Kernel& k, int d, std::int64_t t) { return (k.space[d] + t - 1) / t; }

std::int64_t tiled_invocations(const Kernel& k, const Tile& t) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < k.space.size(); ++d)
    if (!reduced_dim(k, d))
      n *= static_cast<int>(d) == t.di   ? tiles_along(k, t.di, t.ti)
           : static_cast<int>(d) == t.dj ? tiles_along(k, t.dj, t.tj)
                                         : k.space[d];
  return n;
}

// Work per output of one term under tile t, in alu nodes (a load counts 2): a node is evaluated
// once per tile coordinate it depends on.
double tiled_cost(const Kernel& k, const Tile& t, const std::vector<int>& deps) {
  double c = 0;
  for (int i : k.reachable(k.body)) {
    const KNode& n = k.nodes[i];
    const double w = n.kind == KNodeKind::load ? 2 : n.kind == KNodeKind::alu ? 1 : 0;
    c += w * (deps[i] & 1 ? 1.0 : 1.0 / static_cast<double>(t.ti)) *
         (deps[i] & 2 ? 1.0 : 1.0 / static_cast<double>(t.tj));
  }
  return c;
}

// Candidates: tiles of up to JX_VK_TILE (default 4; 0 or 1: one output per invocation, for
// measuring), 2 or 1 along the two innermost output dims of extent ≥ 2. A tile is taken when it
// cuts the work per output to at most kTileGain of one output per invocation (a batched product
// of 16 × 16 matrices, 4 × 4: 0.4; a sum whose every load depends on both dims: 1) and leaves
// the shader at least tile_floor() invocations: on the H200, 4 × 4 tiles of a 256-term sum over
// 102400 outputs (25600 invocations) took 3.0 ms against 1.3 untiled, products of 4 × 4 tiles
// 0.45-0.55 of their time untiled.
constexpr double kTileGain = 0.65;

Tile reduction_tile(const Kernel& k) {
  static const std::int64_t cap = env_int("JX_VK_TILE", 4);
  Tile none;
  if (!k.is_reduction() || reduced_elements(k) >= kWorkgroupReduceMin || cap < 2) return none;
  for (std::size_t d = k.space.size(); d-- > 0;) {
    if (reduced_dim(k, d) || k.space[d] < 2) continue;
    if (none.dj < 0)
      none.dj = static_cast<int>(d);
    else if (none.di < 0)
      none.di = static_cast<int>(d);
  }
  if (none.dj < 0) return none;
  const std::vector<int> deps = tile_deps(k, none);
  const double untiled = tiled_cost(k, none, deps);
  Tile best = none;
  double best_cost = kTileGain * untiled;
  for (std::int64_t ci : {cap, std::int64_t{2}, std::int64_t{1}})
    for (std::int64_t cj : {cap, std::int64_t{2}, std::int64_t{1}}) {
      Tile t = none;
      t.ti = none.di >= 0 ? tile_extent(k.space[none.di], ci) : 1;
      t.tj = tile_extent(k.space[none.dj], cj);
      if (!t.tiled() || tiled_invocations(k, t) < g_tile_floor.load()) continue;
      const double c = tiled_cost(k, t, deps);
      if (c < best_cost) {
        best = t;
        best_cost = c;
      }
    }
  return best;
}

using TileStoreFn = std::function<std::string(const std::string& offset, const std::string& value)>;

// Names and coordinates of tile element (a, b).
struct TileNames {
  const Kernel& k;
  const Tile& t;
  const std::vector<int>& deps;
  std::string suffix(int node, std::int64_t a, std::int64_t b) const {
    return (deps[node] & 1 ? fmt::format("a{}", a) : "") + (deps[node] & 2 ? fmt::format("b{}", b) : "");
  }
  static std::string acc(std::int64_t a, std::int64_t b) { return fmt::format("acc{}_{}", a, b); }
  static std::string coord(int d, std::int64_t t_, std::int64_t a) { return fmt::format("(t{} * {} + {})", d, t_, a); }
  std::vector<std::string> idx(std::vector<std::string> base, std::int64_t a, std::int64_t b) const {
    if (t.di >= 0) base[t.di] = coord(t.di, t.ti, a);
    if (t.dj >= 0) base[t.dj] = coord(t.dj, t.tj, b);
    return base;
  }
};

// The body of each tile element within one pass over the reduced dims: a node is evaluated once
// per distinct pair of the tile coordinates it depends on.
std::string tiled_body(const KernelCtx& c, const TileNames& nm, const std::vector<std::string>& idx,
                       const std::string& ind, const std::string& at) {
  const Kernel& k = c.k;
  std::string s;
  for (int i : k.reachable(k.body))
    for (std::int64_t a = 0; a < (nm.deps[i] & 1 ? nm.t.ti : 1); ++a)
      for (std::int64_t b = 0; b < (nm.deps[i] & 2 ? nm.t.tj : 1); ++b) {
        const NodeNames names{[&](int n) { return nm.suffix(n, a, b); }, "acc"};
        s += nodes_code(c, {i}, nm.idx(idx, a, b), ind, &names);
      }
  for (std::int64_t a = 0; a < nm.t.ti; ++a)
    for (std::int64_t b = 0; b < nm.t.tj; ++b)
      s += ind + combine_code(k, TileNames::acc(a, b), fmt::format("{}(v{}{})", at, k.body, nm.suffix(k.body, a, b)));
  return s;
}

// Each tile element: rounded like the oracle, the epilogue, stored.
std::string tiled_finish(const KernelCtx& c, const TileNames& nm, const std::vector<std::string>& idx,
                         const TileStoreFn& store) {
  const Kernel& k = c.k;
  const bool round = k.nodes[k.body].dtype == DType::float32 && accumulator_type(k, c.f64) == "double";
  std::string s;
  for (std::int64_t a = 0; a < nm.t.ti; ++a)
    for (std::int64_t b = 0; b < nm.t.tj; ++b) {
      const std::string acc = TileNames::acc(a, b);
      std::string off = "0";
      std::int64_t stride = 1;
      for (std::size_t d = k.space.size(); d-- > 0;) {
        if (reduced_dim(k, d)) continue;
        const int di = static_cast<int>(d);
        std::string x = idx[d];
        if (di == nm.t.di || di == nm.t.dj) {
          const std::int64_t t_ = di == nm.t.di ? nm.t.ti : nm.t.tj, e = di == nm.t.di ? a : b;
          x = TileNames::coord(di, t_, e);
        }
        off += fmt::format(" + {} * {}", stride, x);
        stride *= k.space[d];
      }
      s += "  {\n";
      if (round) s += fmt::format("  {0} = double(float({0}));\n", acc);
      std::string v = k.out.dtype == DType::bool_ ? acc + " != 0" : fmt::format("{}({})", gtype(k.out.dtype), acc);
      if (k.epilogue >= 0) {
        std::vector<std::string> eidx = nm.idx(idx, a, b);
        for (std::size_t d = 0; d < k.space.size(); ++d)
          if (reduced_dim(k, d)) eidx[d] = "0";
        const NodeNames names{[&](int) { return fmt::format("e{}_{}", a, b); }, acc};
        s += nodes_code(c, k.reachable(k.epilogue), eidx, "  ", &names);
        v = fmt::format("v{}e{}_{}", k.epilogue, a, b);
      }
      s += store(off, v) + "  }\n";
    }
  return s;
}

// One invocation's tile (its index `elem` counts tiles): the accumulators, one pass over the
// reduced dims, the stores.
std::string tiled_reduction_code(const KernelCtx& c, const Tile& t, const std::string& elem, Shader& sh,
                                 const TileStoreFn& store) {
  const Kernel& k = c.k;
  const std::vector<int> deps = tile_deps(k, t);
  const TileNames nm{k, t, deps};
  std::vector<std::string> idx, outer_names;
  Shape outer;
  for (std::size_t d = 0; d < k.space.size(); ++d) {
    idx.push_back(fmt::format("i{}", d));
    if (reduced_dim(k, d)) continue;
    const int di = static_cast<int>(d);
    const bool tiled = di == t.di || di == t.dj;
    outer.push_back(di == t.di ? tiles_along(k, di, t.ti) : di == t.dj ? tiles_along(k, di, t.tj) : k.space[d]);
    outer_names.push_back(tiled ? fmt::format("t{}", d) : idx.back());
  }
  std::string s = decompose(outer, outer_names, elem);
  const std::string at = accumulator_type(k, c.f64);
  for (std::int64_t a = 0; a < t.ti; ++a)
    for (std::int64_t b = 0; b < t.tj; ++b)
      s += fmt::format("  {} {} = {};\n", at, TileNames::acc(a, b), reduction_identity(k, at));
  std::string ind = "  ";
  for (std::size_t d = 0; d < k.space.size(); ++d)
    if (reduced_dim(k, d)) {
      s += ind + unrolled_reduction(k.space[d]) + loop_open(idx[d], k.space[d], "", sh);
      ind += "  ";
    }
  s += tiled_body(c, nm, idx, ind, at);
  while (ind.size() > 2) {
    ind.resize(ind.size() - 2);
    s += ind + "}\n";
  }
  return s + tiled_finish(c, nm, idx, store);
}
}  // namespace

KernelLayout kernel_layout(const Kernel& k) {
  KernelLayout l;
  l.lanes = reduction_lanes(k);
  if (l.lanes == 0) l.tile = reduction_tile(k);
  return l;
}

// Invocations of a kernel's shader: lanes per output, one per tile of outputs, or one per output.
std::int64_t kernel_invocations(const Kernel& k, const KernelLayout& l) {
  if (l.lanes) return lanes_invocations(k, l.lanes);
  return l.tile.tiled() ? tiled_invocations(k, l.tile) : k.out.size();
}

// The shader's name for the kernel: a tiled one says its tile (`_t4x4`), seen in traces and timings.
std::string kernel_shader_name(const Kernel& k, const KernelLayout& l) {
  if (l.lanes) return k.name + "_lanes";
  return l.tile.tiled() ? fmt::format("{}_t{}x{}", k.name, l.tile.ti, l.tile.tj) : k.name;
}

// A kernel's invocation `elem` (of kernel_invocations): its output or its tile of outputs.
// A lanes reduction folds in the workgroup array `red`, which the shader declares (lanes_shared).
std::string kernel_invocation_code(const KernelCtx& c, const KernelLayout& l, const std::string& elem, Shader& sh,
                                   const std::string& buf, const std::string& red) {
  const Kernel& k = c.k;
  // elem counts from a multiple of the workgroup size, so its warps are the device's
  const WarpMap warps{std::max<std::int64_t>(l.lanes, 1)};
  KernelCtx wc = c;
  if (!l.tile.tiled()) wc.warps = &warps;
  if (l.lanes) {
    sh.max_loop = std::max(sh.max_loop, (reduced_elements(k) + l.lanes - 1) / l.lanes);
    return lanes_code(wc, l.lanes, elem, red, buf);
  }
  if (l.tile.tiled())
    return tiled_reduction_code(c, l.tile, elem, sh, [&](const std::string& o, const std::string& v) {
      return store_code(k.out.dtype, o, v, buf);
    });
  return kernel_element_code(wc, elem, sh, [&](const std::string& v) { return store_code(k.out.dtype, elem, v, buf); });
}

void set_tile_floor(std::int64_t invocations) { g_tile_floor.store(invocations); }
std::int64_t tile_floor() { return g_tile_floor.load(); }

}  // namespace jx::vk
