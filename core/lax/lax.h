#pragma once
#include <tuple>
#include <vector>

#include "core/array/array.h"
#include "core/base/dtype.h"

// jx::lax: one function per primitive, strict like jax.lax (no broadcasting, no promotion).
namespace jx::lax {

Array neg(const Array& x);
Array exp(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array sqrt(const Array& x);
Array abs(const Array& x);
Array sign(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tanh(const Array& x);
Array logical_not(const Array& x);
Array isnan(const Array& x);
Array isfinite(const Array& x);
Array convert_element_type(const Array& x, DType d);
Array stop_gradient(const Array& x);  // identity whose derivative is zero

Array add(const Array& a, const Array& b);
Array sub(const Array& a, const Array& b);
Array mul(const Array& a, const Array& b);
Array div(const Array& a, const Array& b);
Array pow(const Array& a, const Array& b);
Array max(const Array& a, const Array& b);
Array min(const Array& a, const Array& b);
Array lt(const Array& a, const Array& b);
Array le(const Array& a, const Array& b);
Array gt(const Array& a, const Array& b);
Array ge(const Array& a, const Array& b);
Array eq(const Array& a, const Array& b);
Array ne(const Array& a, const Array& b);
Array logical_and(const Array& a, const Array& b);
Array logical_or(const Array& a, const Array& b);
Array select(const Array& pred, const Array& on_true, const Array& on_false);

Array reduce_sum(const Array& x, std::vector<std::int64_t> axes);
Array reduce_max(const Array& x, std::vector<std::int64_t> axes);
Array reduce_min(const Array& x, std::vector<std::int64_t> axes);
Array reduce_prod(const Array& x, std::vector<std::int64_t> axes);
Array argmax(const Array& x, std::int64_t axis);
Array argmin(const Array& x, std::int64_t axis);

struct DotDims {
  std::vector<std::int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
};
// Output dims: batch, lhs free (in order), rhs free (in order).
Array dot_general(const Array& lhs, const Array& rhs, const DotDims& dims);

Array reshape(const Array& x, Shape shape);
Array transpose(const Array& x, std::vector<std::int64_t> perm);
Array broadcast_in_dim(const Array& x, Shape shape, std::vector<std::int64_t> dims);
Array slice(const Array& x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
            std::vector<std::int64_t> strides = {});
// x[..., start:stop:stride, ...] along `axis` only (JAX's lax.slice_in_dim; stop clamped up to start)
Array slice_in_dim(const Array& x, std::int64_t start, std::int64_t stop, std::int64_t stride, std::int64_t axis);
Array rev(const Array& x, std::vector<std::int64_t> axes);
Array concatenate(const std::vector<Array>& xs, std::int64_t axis);
Array pad(const Array& x, std::vector<std::int64_t> lo, std::vector<std::int64_t> hi, double value);
Array iota(DType d, Shape shape, std::int64_t dimension);

Array cholesky(const Array& a);  // lower factor
struct TriangularSolveOptions {
  bool left_side = true, lower = true, transpose_a = false, unit_diagonal = false;
};
Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& o = {});
// (packed LU, permutation matrix P with A = P L U, det(P))
std::tuple<Array, Array, Array> lu(const Array& a);
// A⁻¹ of a (batch of) square float matrices: one primitive, so that its derivative is
// -A⁻¹ Ȧ A⁻¹ (two products) rather than that of lu and its solves; the JIT expands it into
// np::linalg::inv_by_lu's steps before lowering. np::linalg::inv checks and converts first.
Array inv(const Array& a);

}  // namespace jx::lax
