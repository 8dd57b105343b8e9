#pragma once
// Pieces of kernel shaders, shared inside core/backends/vulkan by glsl_renderer.cc (an output per
// invocation, a workgroup per output, groups of kernels), glsl_tiles.cc (a tile of outputs per
// invocation, lanes per output), glsl_split.cc (long sums with lanes across the outputs) and
// glsl_uniform.cc (what a select's if / else saves). Not part of the backend's interface.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/backends/vulkan/glsl_renderer.h"

namespace jx::vk {

// ---- glsl_renderer.cc ---------------------------------------------------------------------------
// A reduction over at least this many elements per output runs one workgroup per output: the
// invocations stride over the reduced elements, then a tree in workgroup memory (log2 256 steps).
// One invocation per output would read its elements one after another (latency-bound on a GPU,
// and over llvmpipe's loop limit past 65535).
constexpr std::int64_t kWorkgroupReduceMin = 1024;

std::string btype(DType d);  // element type of a storage buffer (bool: bytes packed four to a uint)
// A typed read of element `idx` (an int expression) of input buffer b.
std::string load_expr(DType d, int b, const std::string& idx);
// Nodes renamed: node i is `v<i><suffix(i)>`, the reduce_result node reads `acc`.
struct NodeNames {
  std::function<std::string(int)> suffix;
  std::string acc;
};
// The nodes in `order` as GLSL statements (core/backends/cstyle.h), indexed by idx; nullptr
// names: `v<i>` and `acc`.
std::string nodes_code(const KernelCtx& c, const std::vector<int>& order, const std::vector<std::string>& idx,
                       const std::string& ind, const NodeNames* names = nullptr);
std::string store_code(DType d, const std::string& o, const std::string& v, const std::string& buf = "outb");
// Version, workgroup size, buffer declarations, helpers; then main's prologue that computes the
// flat invocation index `gi` and returns past n.
std::string kernel_header(const std::vector<AVal>& ins, DType out, bool doubles, bool f64_math, std::int64_t n);
// Row-major decomposition of `flat` over dims (named by names) into int locals.
std::string decompose(const Shape& dims, const std::vector<std::string>& names, const std::string& flat);
// `[[unroll]] ` for a reduced dim of up to 16 elements where the device unrolls (the products of
// small matrices), else "".
std::string unrolled_reduction(std::int64_t n);
// `for (int var = 0; var < n; ++var) {`, recording n as the shader's longest loop.
std::string loop_open(const std::string& var, std::int64_t n, const std::string& ind, Shader& sh);

bool reduced_dim(const Kernel& k, std::size_t d);
std::int64_t reduced_elements(const Kernel& k);  // elements folded into each output
// int for int32; float for float32 sums short enough (short_f32_sums); else double where the
// device has doubles (as the oracle accumulates), float otherwise.
std::string accumulator_type(const Kernel& k, bool f64);
std::string reduction_identity(const Kernel& k, const std::string& at);
std::string combine_code(const Kernel& k, const std::string& acc, const std::string& v);  // acc ⊕= v
// After the accumulation into `acc`: rounded like the oracle, then the epilogue (or acc) stored.
std::string reduction_finish(const KernelCtx& c, const std::vector<std::string>& idx, const StoreFn& store);
// An invocation's terms of a reduction folded into `acc` (of type at): the outer dims decomposed
// from `outer`, then `for (int rr_ = first; rr_ < terms; rr_ += step)`, each term's nodes in turn.
struct SpaceSplit;
std::string strided_terms(const KernelCtx& c, const SpaceSplit& sp, const std::string& at, const std::string& outer,
                          const std::string& first, std::int64_t step);
// A workgroup's accumulators folded pairwise in a fixed tree (deterministic): red[lid] = acc, then
// for h = half, half / 2, ..., 1 each invocation whose `lane` < h folds in red[lid + h · stride].
std::string tree_fold(const Kernel& k, const std::string& at, const std::string& red, const std::string& lane,
                      std::int64_t half, std::int64_t stride);
// The kernel's space split: idx names every dim (`i<d>`); outer holds the output dims and red
// the reduced ones, each in order, with their names.
struct SpaceSplit {
  std::vector<std::string> idx, outer_names, red_names;
  Shape outer, red;
};
SpaceSplit split_space(const Kernel& k);

// ---- glsl_uniform.cc ----------------------------------------------------------------------------
// The share of a select's loads (then_loads in its true branch, else_loads in its false one) that
// an if / else skips, on warps of kWarp invocations laid out as m says: a warp whose lanes agree
// on the index-only condition `cond` (core/kernel/index_eval.h) skips the untaken branch's, a
// split warp runs both. Averaged over up to kWarpSamples warps spread over the invocations (all
// of them where there are fewer); 0 where cond reads memory or an accumulator (how it splits is
// not known here).
constexpr std::int64_t kWarp = 32;  // NVIDIA's warp; a wave64 GPU splits no more often
constexpr std::int64_t kWarpSamples = 64;
double skipped_loads(const Kernel& k, int cond, const WarpMap& m, int then_loads, int else_loads);
// An if / else costs the loads it cannot schedule across its jump: worth it from a quarter of the
// loads skipped (the interleave of odd and even positions, half; a window test true nearly
// everywhere whose false branch reads nothing, none).
constexpr double kLazySelectSaving = 0.25;

// ---- glsl_split.cc ------------------------------------------------------------------------------
// A split reduction (more than kSplitReductionMin terms an output, a scratch binding) over 2 to
// 256 outputs whose loads lie closer together along the last (output) dim than along the
// innermost reduced one: lanes across the outputs, P phases of them a workgroup. Returns P, or 0
// where the split form's lanes across the terms read closer (JX_VK_OUTS_IN_LANES=0: always 0).
std::int64_t outputs_in_lanes_phases(const Kernel& k);
Shader render_outputs_in_lanes(const Kernel& k, bool f64_math, std::int64_t P);

// ---- glsl_tiles.cc ------------------------------------------------------------------------------
// How a kernel's shader covers its outputs, decided once per kernel (kernel_layout): `lanes`
// invocations per output (a reduction of 128-1023 terms, or of 4-127 expensive ones, over fewer
// than tile_floor() outputs, folded in the workgroup array that lanes_shared declares), else a
// ti × tj tile of outputs per invocation (batched small-matrix products), else one invocation per
// output.
struct Tile {
  int di = -1, dj = -1;         // the tiled space dims (-1: not tiled)
  std::int64_t ti = 1, tj = 1;  // tile extents
  bool tiled() const { return ti * tj > 1; }
};
struct KernelLayout {
  std::int64_t lanes = 0;  // 0: not a lanes reduction
  Tile tile;
};
KernelLayout kernel_layout(const Kernel& k);
std::string lanes_shared(const Kernel& k, bool f64_math, const std::string& red);
// The layout's invocations, the shader's name (`_t4x4`, `_lanes`: seen in traces and timings),
// and invocation `elem`'s code, storing into `buf` (and folding lanes in the array `red`).
std::int64_t kernel_invocations(const Kernel& k, const KernelLayout& l);
std::string kernel_shader_name(const Kernel& k, const KernelLayout& l);
std::string kernel_invocation_code(const KernelCtx& c, const KernelLayout& l, const std::string& elem, Shader& sh,
                                   const std::string& buf, const std::string& red);

}  // namespace jx::vk
