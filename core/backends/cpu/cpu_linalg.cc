// Reference routines over batches of small dense matrices (row-major, leading batch dims).
//   cholesky:          A = L Lᵀ, reads the lower triangle of A, returns L (upper part zero).
//   triangular_solve:  op(A) X = B (left_side) or X op(A) = B, op = identity or transpose;
//                      reads only the triangle `lower` names.
//   lu:                A = P L U with partial pivoting; outputs the packed LU (unit L below the
//                      diagonal, U on and above it), the permutation matrix P, and det(P) = ±1.
//   inv:               A⁻¹ = U⁻¹ L⁻¹ Pᵀ: lu, then the unit-lower and the upper solve of Pᵀ, the
//                      same steps (and values) as np.linalg.inv's lu and two triangular_solves.
// Failures that only the data reveals (a matrix that is not positive definite, a zero on a
// triangular diagonal) throw LinAlgError. lu itself never throws: a singular A yields a zero
// pivot in U, so slogdet can report sign 0 and log|det| = -inf as numpy does.
#include <cmath>
#include <vector>
#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.h"

namespace jx {
namespace {

template <class T>
void cholesky(const T* a, T* l, std::int64_t n, std::int64_t batch) {
  for (std::int64_t b = 0; b < batch; ++b, a += n * n, l += n * n) {
    for (std::int64_t i = 0; i < n * n; ++i) l[i] = T(0);
    for (std::int64_t j = 0; j < n; ++j) {
      double s = a[j * n + j];
      for (std::int64_t k = 0; k < j; ++k) s -= double(l[j * n + k]) * l[j * n + k];
      if (!(s > 0.0))
        throw LinAlgError(fmt::format(
            "cholesky: matrix is not positive definite (leading minor of order {} is not positive)", j + 1));
      const double d = std::sqrt(s);
      l[j * n + j] = static_cast<T>(d);
      for (std::int64_t i = j + 1; i < n; ++i) {
        double t = a[i * n + j];
        for (std::int64_t k = 0; k < j; ++k) t -= double(l[i * n + k]) * l[j * n + k];
        l[i * n + j] = static_cast<T>(t / d);
      }
    }
  }
}

template <class T>
void triangular_solve(const T* a, const T* b, T* x, std::int64_t n, std::int64_t k, std::int64_t batch,
                      const PrimParams& p) {
  // Solve M y = r for each right-hand side, with M(i, j) = op(A)(i, j) on the left side and
  // op(A)(j, i) on the right side (X op(A) = B  <=>  op(A)ᵀ Xᵀ = Bᵀ).
  const bool tr = p.transpose_a != !p.left_side;
  const bool lower = p.lower != tr;  // triangle of M that is nonzero
  for (std::int64_t bi = 0; bi < batch; ++bi, a += n * n, b += n * k, x += n * k) {
    auto M = [&](std::int64_t i, std::int64_t j) -> double { return tr ? a[j * n + i] : a[i * n + j]; };
    for (std::int64_t c = 0; c < k; ++c) {
      // Element i of right-hand side c: column c of B (left) or row c of B (right).
      auto at = [&](std::int64_t i) { return p.left_side ? i * k + c : c * n + i; };
      for (std::int64_t s = 0; s < n; ++s) {
        const std::int64_t i = lower ? s : n - 1 - s;
        double v = b[at(i)];
        if (lower)
          for (std::int64_t j = 0; j < i; ++j) v -= M(i, j) * x[at(j)];
        else
          for (std::int64_t j = i + 1; j < n; ++j) v -= M(i, j) * x[at(j)];
        if (!p.unit_diagonal) {
          const double d = M(i, i);
          if (d == 0.0)
            throw LinAlgError(fmt::format("triangular_solve: matrix is singular (zero on the diagonal at {})", i));
          v /= d;
        }
        x[at(i)] = static_cast<T>(v);
      }
    }
  }
}

template <class T>
void lu(const T* a, T* f, T* pm, T* sign, std::int64_t n, std::int64_t batch) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  for (std::int64_t b = 0; b < batch; ++b, a += n * n, f += n * n, pm += n * n) {
    std::copy(a, a + n * n, f);
    for (std::int64_t i = 0; i < n; ++i) perm[i] = i;
    T det_p = T(1);
    for (std::int64_t c = 0; c < n; ++c) {
      std::int64_t piv = c;
      for (std::int64_t r = c + 1; r < n; ++r)
        if (std::abs(f[r * n + c]) > std::abs(f[piv * n + c])) piv = r;
      if (piv != c) {
        for (std::int64_t j = 0; j < n; ++j) std::swap(f[c * n + j], f[piv * n + j]);
        std::swap(perm[c], perm[piv]);
        det_p = -det_p;
      }
      const T d = f[c * n + c];
      if (d == T(0)) continue;  // singular: leave the zero pivot in U
      for (std::int64_t r = c + 1; r < n; ++r) {
        const T m = f[r * n + c] / d;
        f[r * n + c] = m;
        for (std::int64_t j = c + 1; j < n; ++j) f[r * n + j] -= m * f[c * n + j];
      }
    }
    // Row i of LU is row perm[i] of A, so A = P L U with P[perm[i], i] = 1.
    for (std::int64_t i = 0; i < n * n; ++i) pm[i] = T(0);
    for (std::int64_t i = 0; i < n; ++i) pm[perm[i] * n + i] = T(1);
    sign[b] = det_p;
  }
}

// A⁻¹ per matrix through lu and the two solves of lu_solve (a zero pivot: the upper solve's
// LinAlgError, as for np.linalg.inv's own steps).
template <class T>
void inv(const T* a, T* x, std::int64_t n, std::int64_t batch) {
  std::vector<T> f(static_cast<std::size_t>(n * n)), pm(f.size()), pt(f.size()), y(f.size());
  T sign{};
  PrimParams lower, upper;
  lower.unit_diagonal = true;
  upper.lower = false;
  for (std::int64_t b = 0; b < batch; ++b, a += n * n, x += n * n) {
    lu<T>(a, f.data(), pm.data(), &sign, n, 1);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) pt[i * n + j] = pm[j * n + i];
    triangular_solve<T>(f.data(), pt.data(), y.data(), n, n, 1, lower);
    triangular_solve<T>(f.data(), y.data(), x, n, n, 1, upper);
  }
}

}  // namespace

void cpu_linalg(const Op& op, std::span<const std::byte* const> in, std::span<std::byte* const> out) {
  const AVal& a = op.in[0];
  const std::int64_t n = a.shape.back();
  const std::int64_t batch = n ? a.size() / (n * n) : numel(Shape(a.shape.begin(), a.shape.end() - 2));
  auto run = [&]<class T>() {
    auto I = [&](std::size_t i) { return reinterpret_cast<const T*>(in[i]); };
    auto O = [&](std::size_t i) { return reinterpret_cast<T*>(out[i]); };
    switch (op.prim) {
      case Prim::cholesky: return cholesky<T>(I(0), O(0), n, batch);
      case Prim::lu: return lu<T>(I(0), O(0), O(1), O(2), n, batch);
      case Prim::inv: return inv<T>(I(0), O(0), n, batch);
      case Prim::triangular_solve: {
        const AVal& bv = op.in[1];
        const std::int64_t k = op.params.left_side ? bv.shape.back() : bv.shape[bv.ndim() - 2];
        return triangular_solve<T>(I(0), I(1), O(0), n, k, batch, op.params);
      }
      default: throw Error(fmt::format("cpu: {} is not a routine", prim_name(op.prim)));
    }
  };
  if (a.dtype == DType::float32)
    run.template operator()<float>();
  else
    run.template operator()<double>();
}

}  // namespace jx
