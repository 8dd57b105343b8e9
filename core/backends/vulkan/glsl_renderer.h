#pragma once
// Kernels of the kernel IR (and the movement routines pad, concatenate, argmax/argmin) rendered
// as GLSL compute shaders: storage buffers at set 0, inputs at bindings 0..k-1, the output at k;
// shapes baked in (the kernel key includes them). An invocation computes one output element, a
// tile of outputs or one lane of an output (glsl_tiles.cc); long reductions run a workgroup per
// output or split it over several.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/backends/cstyle.h"
#include "core/kernel/kernel.h"

namespace jx::vk {

constexpr std::uint32_t kWorkgroup = 256;  // invocations per workgroup (WebGPU's default limit)
// A reduction over more than 2048 elements per output splits over several workgroups when its
// budget leaves a binding for their scratch buffer (glsl_renderer.cc: split_count).
constexpr std::int64_t kSplitReductionMin = 2049;

struct Shader {
  std::string name, glsl;
  int buffers = 0;               // storage buffers bound (inputs + output)
  std::int64_t invocations = 0;  // invocations dispatched (outputs, tiles of outputs or lanes)
  bool float64 = false;          // uses doubles (needs shaderFloat64)
  std::int64_t max_loop = 0;     // trip count of the longest loop (a reduction's extent)
  // > 0: one more storage buffer of this size, the last binding, zeroed once by the backend and
  // left zeroed by every dispatch (a split reduction's partials and counters)
  std::size_t scratch_bytes = 0;
};

std::string gtype(DType d);              // GLSL scalar type of a dtype
std::string literal(DType d, double v);  // exact GLSL literal
bool uses_double(const std::vector<AVal>& ins, DType out, const std::vector<KNode>& nodes);
// float32 sums of 3 to kShortF32Sum terms accumulate in float (core/backends/cstyle.h:
// short_f32_sum; JX_VK_F32_ACC=0 keeps double). On the H200 the m = 13 DLM filter, smoother and
// gradient took 0.81-0.86x the time; with float for two-term sums too the m = 2 shaders took 1.1x.
bool short_f32_sums();
std::string prelude(bool doubles, bool f64_math);  // helper functions every shader may call
// The first lines of every compute shader: the version, the extensions generated code may use
// (`[[unroll]]`: GL_EXT_control_flow_attributes) and the workgroup size.
std::string glsl_header(std::int64_t local_size_x);
// Whether generated loops over small fixed counts (an element's values, a small matrix's rows)
// carry `[[unroll]]`, so their indices fold to constants and the arrays they index stay in
// registers. Set by the backend when it opens its device: on for GPUs, off on llvmpipe (its LLVM
// unrolls what pays on its own, and unrolled shaders took it 50% longer to compile: the DLM tests
// 187 -> 280 s cold); JX_VK_UNROLL=0|1 overrides.
void set_unroll_loops(bool on);
bool unroll_loops();
// The fewest invocations a shader keeps when a short reduction computes a tile of outputs per
// invocation (glsl_tiles.cc: reduction_tile): enough to fill the GPU, 2^18 by default (the H200
// holds 132 × 2048 at once); set by the backend when it opens its device, 0 on llvmpipe (a CPU
// runs a few threads, and fewer invocations cost it nothing).
void set_tile_floor(std::int64_t invocations);
std::int64_t tile_floor();

// One kernel's element computation, for shaders that inline kernels (fused scans): `load(b,
// off)` reads element `off` (an int expression) of the kernel's input b as its dtype (nullptr:
// the kernel's own bindings in0..), `store(v)` writes the value.
// How a shader form lays a warp's invocations over a kernel's space: lane l of the warp starting
// at invocation w takes output (the outer dims' row-major flat index) (w + l) / L and the reduced
// elements (w + l) mod L + L·j, j = 0, 1, ... in step; L = 1 for an output an invocation (its
// reduced dims in loops that every lane runs alike). Forms without one compute both branches of
// every select.
struct WarpMap {
  std::int64_t lanes_per_output = 1;
};
struct KernelCtx {
  const Kernel& k;
  bool f64;
  std::function<std::string(int b, const std::string& off)> load;
  const WarpMap* warps = nullptr;  // nullptr: the invocations' layout is the caller's own
};
using StoreFn = std::function<std::string(const std::string& value)>;
std::string kernel_element_code(const KernelCtx& c, const std::string& elem, Shader& sh, const StoreFn& store);
// The same for the routines that have shaders (pad, concatenate, argmax, argmin).
bool routine_has_shader(Prim p);
// Routines a fused scan body or an associative-scan combine can inline: those, and the linear
// algebra of glsl_linalg.h (one invocation per matrix).
bool routine_inlines(Prim p);
std::string routine_element_code(const Op& op, const std::string& elem, Shader& sh,
                                 const std::function<std::string(int, const std::string&)>& load, const StoreFn& store);

// `f64_math`: the device has shaderFloat64, so float64 transcendentals (and float32 ones, for
// accuracy) use the double-precision helpers; reductions accumulate in double as the oracle does.
// A long reduction splits over workgroups only where lowering left the kernel a scratch binding
// (Kernel::scratch_binding).
Shader render_kernel(const Kernel& k, bool f64_math);
// Independent kernels in one shader (horizontal fusion, core/jit/kernel_groups.h): inputs at
// bindings 0..k-1, member j's output at k + j; member j reads its input b at binding binds[b].
// joins_group: kernels rendered with an invocation per output or per tile of outputs (elementwise,
// short reductions), or with lanes per output (every workgroup runs one member, so their barriers
// stay uniform).
struct GroupedKernel {
  const Kernel* kernel;
  std::vector<int> binds;
};
bool joins_group(const Kernel& k);
Shader render_kernel_group(const std::vector<GroupedKernel>& members, const std::vector<AVal>& inputs, bool f64_math);
// pad, concatenate, argmax, argmin; nullopt for primitives without a shader (linear algebra).
std::optional<Shader> render_routine(const Op& op);

// Workgroup counts for n invocations (x at most 65535, the rest in y).
std::pair<std::uint32_t, std::uint32_t> workgroups(std::int64_t n, std::int64_t size = kWorkgroup);

}  // namespace jx::vk
