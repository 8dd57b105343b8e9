#pragma once
// A program's steps run by one workgroup together: every buffer has a home (registers, a local
// array, workgroup memory, a packed global buffer or per-workgroup global scratch), each step's
// elements (a linear-algebra step's matrices) are strided over the workgroup's invocations, and a
// barrier separates a step from the next one that reads what it wrote or rewrites what it read.
// Shared by the fused loop shader (glsl_scan.cc: one workgroup runs the whole lax.scan) and the
// cooperative associative scan (glsl_assoc_coop.cc: one workgroup per combine).
#include <cstdint>
#include <string>
#include <vector>

#include "core/backends/vulkan/glsl_renderer.h"
#include "core/kernel/program.h"

namespace jx::vk {

// reg: one register per buffer (elementwise bodies); local: a local array per buffer, indexed
// by constants in single-invocation bodies, so the compiler keeps it in registers.
// global_out: a body buffer spilled past the results in gout (workgroup memory too small);
// scratch: words of the workgroup's own slice of the `scr` buffer (sc_ld/sc_st, glsl_words.h).
enum class Home : std::uint8_t { global_in, global_x, shared, reg, local, global_out, scratch };
struct Loc {
  Home home;
  std::int64_t base = 0;  // words (packed buffer, shared memory or the workgroup's scratch)
  AVal aval;
  // global_in / global_x of a scan run per series: the series' first element in the operand (an
  // int expression, "" for none) and, for global_x, the elements of one x row (0: aval.size())
  std::string shift = {};
  std::int64_t row = 0;
};

// Reads element `i` of a buffer wherever it lives (t: the step's x index).
std::string read_loc(const Loc& l, int buffer, const std::string& i);
// Writes element `i` of a buffer kept in workgroup memory, a local array or global memory.
std::string write_loc(const Loc& l, int buffer, const std::string& i, const std::string& v);

// Invocations of one workgroup of `wg` striding over n elements (no loop when one pass
// suffices; invocations lane0 .. lane0 + n − 1 where n fits from lane0); in single mode invocation
// 0 alone runs every element (the others have returned).
std::string strided_loop(std::int64_t n, const std::string& body, bool single, std::int64_t wg = kWorkgroup,
                         std::int64_t lane0 = 0);
std::int64_t loop_iterations(std::int64_t n, bool single, std::int64_t wg = kWorkgroup);

struct WorkgroupSteps {
  std::string code;
  int barriers = 0;             // emitted between steps (none before the first, none after the last)
  std::int64_t iterations = 0;  // loop iterations one invocation runs (llvmpipe's limit counts them)
};
// The barrier epoch of each step of `b` (by index; −1: a free step or one not run) as
// workgroup_steps emits them: steps of one epoch run between the same two barriers, so a buffer
// whose last reader runs in epoch e can share its words with one first written after e.
std::vector<int> step_epochs(const Program& b, bool single);

// The most entries of lus factored together between two barriers (a workgroup's invocations split
// between them; 0 where no two are): the gradient's transposed combine factors two at once.
std::int64_t together_lu_entries(const Program& b);

// Every step of `b` (free steps skipped), buffers at `loc`; `barrier` is the code of one barrier.
WorkgroupSteps workgroup_steps(const Program& b, const std::vector<Loc>& loc, bool single, std::int64_t wg,
                               const std::string& barrier, bool f64_math, Shader& sh);

}  // namespace jx::vk
