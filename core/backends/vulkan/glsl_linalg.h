#pragma once
// Small dense linear algebra as GLSL, one invocation per n × n matrix of a batch: cholesky,
// triangular_solve and lu, written the way the cpu oracle computes them (core/backends/cpu/
// cpu_linalg.cc: the same loop orders, cholesky and triangular_solve accumulating in double
// where the device has shaderFloat64). Inlined into fused scan bodies and associative-scan
// combines, so a DLM model with m > 2 keeps its scans on the GPU. A top-level batch of lu takes an
// invocation per row instead (render_linalg_routine: lu_rows_code).
//
// The one difference from the oracle: a shader cannot raise. Where the oracle throws
// LinAlgError (a matrix that is not positive definite, a zero on a triangular diagonal), the
// shader gives NaN (cholesky) or ±inf/NaN (the division by zero), as JAX does on a GPU. So at top
// level vulkan runs a single matrix through the oracle's host routine (its errors are the
// oracle's) and a batch of matrices as one shader (vulkan_backend.cc).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backends/vulkan/glsl_renderer.h"

namespace jx::vk {

bool is_linalg(Prim p);  // cholesky, triangular_solve, lu

// The matrices of the batch (the invocations a routine step is strided over).
std::int64_t linalg_matrices(const Op& op);
// Right-hand sides per matrix of a triangular_solve.
std::int64_t rhs_columns(const Op& op);
// Loop iterations one matrix costs an invocation (the driver's watchdog budget counts them).
std::int64_t linalg_iterations(const Op& op);

// Code for matrix `mat` (an int expression) of the batch: `load(b, off)` reads element `off` of
// input b, `load_out(o, off)` and `store_at(o, off, v)` read and write element `off` of output o
// (the factorizations and solves work in place in their outputs). `registers`: the outputs are an
// invocation's own arrays (an associative-scan combine), where an LU of up to 8 rows exchanges its
// pivot rows by selects (unrolled on GPUs); in memory it exchanges only the two rows by index.
using StoreAtFn = std::function<std::string(int out, const std::string& off, const std::string& value)>;
std::string linalg_matrix_code(const Op& op, const std::string& mat, bool f64_math, Shader& sh,
                               const std::function<std::string(int, const std::string&)>& load,
                               const std::function<std::string(int, const std::string&)>& load_out,
                               const StoreAtFn& store_at, bool registers = false);

// The same run by a whole workgroup together: all its `wg` invocations reach this code in uniform
// control flow (`lid` their index), `barrier` is the code of one barrier. triangular_solve takes
// an invocation per (matrix, right-hand side), from invocation lane0 where they fit after it (no
// barrier of its own: it can run beside other steps); lu and cholesky take the matrices in turn,
// each elimination step strided over the workgroup, a barrier between steps: the per-matrix
// code's operations in its order (bit for bit its results), at a workgroup's parallelism. Adds
// the loop iterations one invocation runs to `iterations`.
// `perm`, the name of an int[n] array the caller declares, folds the permutation of np.linalg.inv
// (U⁻¹ L⁻¹ Pᵀ): a lu of one matrix keeps its pivots there and writes no P (its storage is only
// the elimination's working buffer), and ends with a barrier after its factors' last write; a
// unit-lower triangular solve of one matrix reads its right-hand sides Pᵀ[i][c] = (perm[i] == c)
// from it instead of operand 1.
std::string linalg_workgroup_code(const Op& op, std::int64_t wg, std::int64_t lane0, const std::string& barrier,
                                  bool f64_math, Shader& sh,
                                  const std::function<std::string(int, const std::string&)>& load,
                                  const std::function<std::string(int, const std::string&)>& load_out,
                                  const StoreAtFn& store_at, std::int64_t& iterations, const std::string& perm = "");

// lu of independent single matrices of one size and type at once (steps between the same two
// barriers): the workgroup splits into equal parts, one per matrix, which share the barriers.
struct LinalgIo {
  const Op& op;
  std::function<std::string(int, const std::string&)> load, load_out;
  StoreAtFn store_at;
};
std::string lu_workgroup_code(const std::vector<LinalgIo>& jobs, std::int64_t wg, const std::string& barrier,
                              bool f64_math, Shader& sh, std::int64_t& iterations);

// A top-level routine as its own shader, one invocation per matrix (inputs at bindings 0..,
// outputs after them); nullopt where it cannot (not floating point, over the buffer budget).
std::optional<Shader> render_linalg_routine(const Op& op, bool f64_math, int max_buffers);

}  // namespace jx::vk
