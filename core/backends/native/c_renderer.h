#pragma once
#include <string>
#include <vector>

#include "core/kernel/kernel.h"
#include "core/kernel/program.h"

namespace jx::native {

// C99 helpers every generated translation unit starts with (NaN-propagating max/min, wrapping
// int32 arithmetic, saturating float->int32), matching the cpu interpreter's semantics.
std::string c_prelude();
// One kernel as `void <name>(const void* const* in, void* const* out)`. With `parallel`, a
// kernel of at least kParallelElements (space) elements runs on OpenMP threads: over its outputs
// when it has kParallelMinOutputs of them, else (a reduction) over each output's terms in
// blocks of kParallelBlock, accumulated in order afterwards; the results do not change.
inline constexpr std::int64_t kParallelElements = 1 << 16, kParallelMinOutputs = 64, kParallelBlock = 1 << 16;
std::string render_kernel(const Kernel& k, const std::string& name, bool is_static = false, bool parallel = false);
// A whole scan as `void <name>(const void* const* operands, void* const* results)`: one C
// loop over the steps. Small bodies without routines are unrolled into straight-line code over
// local arrays indexed by constants (registers once compiled; *unrolled set true); otherwise body
// kernels become static functions, routines C code, carries and temporaries one block allocated
// once per call (on the stack when small). Throws BackendError when the body holds a step it
// cannot render (a nested scan). In unrolled bodies, sums whose results only flow where a sign of
// zero cannot matter start from their first term (counted in *first_term_sums); the results
// leaving the loop are those of the interpreter, bit for bit (with JX_NATIVE_F32_ACC=0:
// float_accumulator).
std::string render_scan(const ScanProgram& s, const std::string& name, bool* unrolled = nullptr,
                        int* first_term_sums = nullptr);
// An associative scan (its axis outermost: every dim before it of size 1) as
// `void <name>(const void* const* operands, void* const* results)`: its positions split into
// `chunks` blocks, each folded on an OpenMP thread, then the blocks' prefixes combined in order
// and applied to every later block on the threads (c_assoc.cc). The combine is rendered as
// render_scan renders a one-step body (*unrolled as there). Throws BackendError for what it cannot
// render (a combine with a nested scan, an element over kAssocMaxElementBytes). With
// flush_subnormals, the combines run with subnormals flushed to zero (as XLA's CPU runtime does).
inline constexpr std::int64_t kAssocChunks = 16, kAssocMinPerChunk = 32;
inline constexpr std::size_t kAssocMaxElementBytes = 64 * 1024;
std::string render_assoc_scan(const AssocProgram& ap, const std::string& name, std::int64_t chunks,
                              bool flush_subnormals, bool* unrolled = nullptr);
// A kernel's space dims split into kept (the output's) and reduced ones, each in order, with the
// number of elements each set spans.
struct SpaceSplit {
  std::vector<std::size_t> kept, red;
  std::int64_t n_out = 1, n_in = 1;
};
SpaceSplit split_space(const Kernel& k);
std::string c_type(DType d);
std::string literal(DType d, double v);  // exact (hex floats)
// The statements `const T v<i> = ...;` computing `order`'s nodes; idx[d] is the C expression of
// space dim d's index (a loop variable, or a constant when unrolled); loads read `in<buffer>`, or
// (*in_names)[buffer] where given.
std::string nodes_code(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx,
                       const std::string& ind, const std::vector<std::string>* in_names = nullptr);
std::string store(DType d, const std::string& v);  // v converted to d (bools normalised to 0/1)
// A reduction kernel's accumulator `acc` (double, as in the interpreter, or float:
// float_accumulator): its identity, its update
// by the value v, its rounding to the body dtype once all terms are in, and the stored result.
std::string reduce_identity(const Kernel& k);
std::string reduce_update(const Kernel& k, const std::string& v, const std::string& ind);
std::string reduce_finish(const Kernel& k, const std::string& ind);
std::string reduce_store(const Kernel& k);
// Whether a reduction of `terms` terms per output accumulates in float instead (cstyle.h:
// short_f32_sum; JX_NATIVE_F32_ACC=0 keeps double, bit for bit the interpreter's results).
bool float_accumulator(const Kernel& k, std::int64_t terms);

}  // namespace jx::native
