// numpy.linalg on the routines: solve and inv through A = P L U (Pᵀb, then a unit-lower and an
// upper triangular solve; inv, a primitive of its own, solves for Pᵀ itself); slogdet from U's
// diagonal and det(P).
#include "core/np/np_internal.h"

namespace jx::np::linalg {
namespace {

Array as_float_matrix(const char* name, const Array& a) {
  if (a.ndim() < 2 || a.shape()[a.ndim() - 1] != a.shape()[a.ndim() - 2])
    throw ShapeError(
        fmt::format("{}: expected a (batch of) square matrices [..., n, n], got {}", name, a.aval().str()));
  return is_floating(a.dtype()) ? a : detail::cast(a, DType::float32);
}

template <class F>
auto with_name(const char* name, F f) {
  try {
    return f();
  } catch (const LinAlgError& e) {
    throw LinAlgError(fmt::format("{}: {}", name, e.what()));
  }
}

// x with L U x = y, from lu's packed factors f (L unit lower, U upper).
Array lu_solve(const Array& f, const Array& y) {
  const Array z =
      triangular_solve(f, y, {.left_side = true, .lower = true, .transpose_a = false, .unit_diagonal = true});
  return triangular_solve(f, z, {.left_side = true, .lower = false, .transpose_a = false, .unit_diagonal = false});
}

}  // namespace

Array cholesky(const Array& a) { return lax::cholesky(as_float_matrix("cholesky", a)); }

Array triangular_solve(const Array& a0, const Array& b0, const lax::TriangularSolveOptions& o) {
  Array a = as_float_matrix("triangular_solve", a0);
  Array b = detail::cast(b0, promote(a.dtype(), b0.dtype()));
  a = detail::cast(a, b.dtype());
  if (b.ndim() < 2)
    throw ShapeError(fmt::format("triangular_solve: b must be a (batch of) matrices, got {}", b.aval().str()));
  Shape batch =
      broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2));
  auto with_batch = [&](const Array& x) {
    Shape s = batch;
    s.insert(s.end(), x.shape().end() - 2, x.shape().end());
    return detail::broadcast_as("triangular_solve", x, s);
  };
  return lax::triangular_solve(with_batch(a), with_batch(b), o);
}

Array solve(const Array& a0, const Array& b0) {
  Array a = as_float_matrix("solve", a0);
  const DType d = promote(a.dtype(), is_floating(b0.dtype()) ? b0.dtype() : DType::float32);
  a = detail::cast(a, d);
  Array b = detail::cast(b0, d);
  const std::int64_t n = a.shape().back();
  const bool vec = b.ndim() == 1;
  if (vec) b = expand_dims(b, -1);
  if (b.ndim() < 2 || b.shape()[b.ndim() - 2] != n)
    throw ShapeError(fmt::format("solve: cannot solve {} with right-hand side {}", a.aval().str(), b0.aval().str()));
  return with_name("solve", [&] {
    auto [f, p, s] = lax::lu(a);
    Array x = lu_solve(f, matmul(swapaxes(p, -1, -2), b));
    return vec ? squeeze(x, std::vector<std::int64_t>{-1}) : x;
  });
}

// The primitive: differentiated as a whole (Ẋ = -X Ȧ X), computed as inv_by_lu.
Array inv(const Array& a0) {
  Array a = as_float_matrix("inv", a0);
  return with_name("inv", [&] { return lax::inv(a); });
}

// A⁻¹ = U⁻¹ L⁻¹ Pᵀ: solve(A, I) without its product Pᵀ I (the same values: each entry of that
// product is one 0 or 1 times 1 plus zeros).
Array inv_by_lu(const Array& a0) {
  Array a = as_float_matrix("inv", a0);
  return with_name("inv", [&] {
    auto [f, p, s] = lax::lu(a);
    return lu_solve(f, swapaxes(p, -1, -2));
  });
}

std::pair<Array, Array> slogdet(const Array& a0) {
  Array a = as_float_matrix("slogdet", a0);
  auto [f, p, s] = lax::lu(a);
  Array d = diagonal(f, 0, -2, -1);
  Array sign = multiply(s, prod(np::sign(d), std::vector<std::int64_t>{-1}));
  Array logabs = sum(log(abs(d)), std::vector<std::int64_t>{-1});
  return {sign, logabs};
}

Array det(const Array& a) {
  auto [s, l] = slogdet(a);
  return multiply(s, exp(l));
}

}  // namespace jx::np::linalg
