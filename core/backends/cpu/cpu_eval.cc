// The cpu backend's interpreter for elementwise, reduction, movement and creation primitives.
// Correctness over speed: it is the oracle every other backend is compared with. Integer
// arithmetic wraps (two's complement) instead of overflowing; float-to-int conversion
// saturates and maps NaN to 0; float reductions accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/backends/cpu/cpu_backend.h"
#include "core/backends/cpu/strided.h"
#include "core/prim/scalar_ops.h"

namespace jx {
namespace {

using I32 = std::int32_t;
using U8 = std::uint8_t;

template <class T>
const T* cin(const std::byte* p) {
  return reinterpret_cast<const T*>(p);
}
template <class T>
T* cout(std::byte* p) {
  return reinterpret_cast<T*>(p);
}

template <class T>
constexpr bool is_f = std::is_floating_point_v<T>;

template <class T>
bool nan_of(T v) {
  if constexpr (is_f<T>)
    return std::isnan(v);
  else
    return false;
}

// An elementwise primitive over whole arrays: the scalar table (core/prim/scalar_ops.h) with the
// primitive and the types fixed per call, so the loop has no switch.
void eval_elementwise(const Op& op, std::span<const std::byte* const> in, std::byte* out) {
  const std::int64_t n = op.out[0].size();
  if (op.prim == Prim::convert) {
    visit_dtype(op.in[0].dtype, [&]<class S>() {
      visit_dtype(op.out[0].dtype, [&]<class T>() {
        for (std::int64_t i = 0; i < n; ++i) cout<T>(out)[i] = scalar::convert<T>(cin<S>(in[0])[i]);
      });
    });
    return;
  }
  const bool select = op.prim == Prim::select;
  auto loop = [&]<class T, class R>() {
    scalar::with_elementwise(op.prim, [&]<Prim P>() {
      const T* a = cin<T>(in[select ? 1 : 0]);
      const T* b = in.size() > (select ? 2u : 1u) ? cin<T>(in[select ? 2 : 1]) : a;
      const U8* cond = select ? cin<U8>(in[0]) : nullptr;
      R* y = cout<R>(out);
      if constexpr (P == Prim::select)
        for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<R>(scalar::apply<P, T>(T(cond[i]), a[i], b[i]));
      else if constexpr (P != Prim::convert)
        for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<R>(scalar::apply<P, T>(a[i], b[i]));
    });
  };
  visit_dtype(op.in[select ? 1 : 0].dtype, [&]<class T>() {
    if (op.out[0].dtype == DType::bool_)
      loop.template operator()<T, U8>();
    else
      loop.template operator()<T, T>();
  });
}

// Per-input-dimension stride into the output for a reduction (0 on reduced axes).
std::vector<std::int64_t> reduce_out_strides(const Shape& s, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> st(s.size(), 0);
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end()) {
      st[i] = acc;
      acc *= s[i];
    }
  return st;
}

void eval_reduce(const Op& op, const std::byte* in, std::byte* out) {
  const Shape& s = op.in[0].shape;
  const std::int64_t nout = op.out[0].size();
  std::array<std::vector<std::int64_t>, 2> st{row_major_strides(s), reduce_out_strides(s, op.params.axes)};
  visit_dtype(op.in[0].dtype, [&]<class T>() {
    using Acc = std::conditional_t<is_f<T>, double, std::int64_t>;
    const T* x = cin<T>(in);
    T* y = cout<T>(out);
    if (op.prim == Prim::reduce_sum || op.prim == Prim::reduce_prod) {
      const bool sum = op.prim == Prim::reduce_sum;
      std::vector<Acc> acc(static_cast<std::size_t>(nout), sum ? Acc(0) : Acc(1));
      strided_loop<2>(s, st, {0, 0}, [&](auto o) {
        if (sum)
          acc[o[1]] += Acc(x[o[0]]);
        else if constexpr (is_f<T>)
          acc[o[1]] *= Acc(x[o[0]]);
        else
          acc[o[1]] = static_cast<Acc>(static_cast<std::uint64_t>(acc[o[1]]) * static_cast<std::uint64_t>(x[o[0]]));
      });
      for (std::int64_t i = 0; i < nout; ++i) y[i] = static_cast<T>(acc[i]);
      return;
    }
    const bool mx = op.prim == Prim::reduce_max;
    const T ident = mx ? (is_f<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest())
                       : (is_f<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max());
    std::fill(y, y + nout, ident);
    strided_loop<2>(s, st, {0, 0}, [&](auto o) {
      T v = x[o[0]];
      T& r = y[o[1]];
      if (nan_of(r)) return;
      if (nan_of(v) || (mx ? v > r : v < r)) r = v;
    });
  });
}

void eval_arg(const Op& op, const std::byte* in, std::byte* out) {
  const Shape& s = op.in[0].shape;
  const auto ax = op.params.axis;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < ax; ++i) outer *= s[i];
  for (std::size_t i = ax + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t n = s[ax];
  const bool mx = op.prim == Prim::argmax;
  visit_dtype(op.in[0].dtype, [&]<class T>() {
    const T* x = cin<T>(in);
    I32* y = cout<I32>(out);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* p = x + o * n * inner + i;
        std::int64_t best = 0;
        for (std::int64_t k = 1; k < n && !nan_of(p[best * inner]); ++k) {
          T v = p[k * inner];
          if (nan_of(v) || (mx ? v > p[best * inner] : v < p[best * inner])) best = k;
        }
        y[o * inner + i] = static_cast<I32>(best);
      }
  });
}

// Linear offsets of every index over `dims` of a row-major array of shape s, row-major in the
// order `dims` lists them.
std::vector<std::int64_t> dim_offsets(const Shape& s, const std::vector<std::int64_t>& dims) {
  auto st = row_major_strides(s);
  std::vector<std::int64_t> offs{0};
  for (auto d : dims) {
    std::vector<std::int64_t> next;
    next.reserve(offs.size() * static_cast<std::size_t>(s[d]));
    for (auto o : offs)
      for (std::int64_t k = 0; k < s[d]; ++k) next.push_back(o + k * st[d]);
    offs = std::move(next);
  }
  return offs;
}

std::vector<std::int64_t> free_dims(std::size_t nd, const std::vector<std::int64_t>& a,
                                    const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> f;
  for (std::size_t i = 0; i < nd; ++i)
    if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end())
      f.push_back(static_cast<std::int64_t>(i));
  return f;
}

// out[b, i, j] = sum_k lhs[b, i, k] * rhs[b, j, k] with (b, i, k) the batch, free and contracting
// index groups of each operand.
void eval_dot_general(const Op& op, const std::byte* l_, const std::byte* r_, std::byte* out) {
  const auto& p = op.params;
  const Shape &ls = op.in[0].shape, &rs = op.in[1].shape;
  auto lb = dim_offsets(ls, p.lhs_batch), rb = dim_offsets(rs, p.rhs_batch);
  auto li = dim_offsets(ls, free_dims(ls.size(), p.lhs_batch, p.lhs_contract));
  auto rj = dim_offsets(rs, free_dims(rs.size(), p.rhs_batch, p.rhs_contract));
  auto lk = dim_offsets(ls, p.lhs_contract), rk = dim_offsets(rs, p.rhs_contract);
  visit_dtype(op.in[0].dtype, [&]<class T>() {
    using Acc = std::conditional_t<is_f<T>, double, std::uint64_t>;
    const T* l = cin<T>(l_);
    const T* r = cin<T>(r_);
    T* y = cout<T>(out);
    std::size_t o = 0;
    for (std::size_t b = 0; b < lb.size(); ++b)
      for (auto i : li)
        for (auto j : rj) {
          Acc acc = 0;
          for (std::size_t k = 0; k < lk.size(); ++k) acc += Acc(l[lb[b] + i + lk[k]]) * Acc(r[rb[b] + j + rk[k]]);
          y[o++] = static_cast<T>(acc);
        }
  });
}

// out[idx] = in[base + sum_d idx[d] * in_strides[d]] over the output shape.
void gather_copy(DType d, const Shape& out_shape, std::int64_t base, std::vector<std::int64_t> in_strides,
                 const std::byte* in, std::byte* out) {
  visit_dtype(d, [&]<class T>() {
    const T* x = cin<T>(in);
    T* y = cout<T>(out);
    std::int64_t o = 0;
    strided_loop<1>(out_shape, {std::move(in_strides)}, {base}, [&](auto off) { y[o++] = x[off[0]]; });
  });
}

void eval_movement(const Op& op, std::span<const std::byte* const> in, std::byte* out) {
  const auto& p = op.params;
  const AVal& a = op.in[0];
  const DType d = a.dtype;
  const std::size_t es = dtype_size(d);
  const auto st = row_major_strides(a.shape);
  switch (op.prim) {
    case Prim::reshape:
      if (a.bytes()) std::memcpy(out, in[0], a.bytes());
      return;
    case Prim::transpose: {
      std::vector<std::int64_t> s;
      for (auto q : p.perm) s.push_back(st[q]);
      return gather_copy(d, op.out[0].shape, 0, s, in[0], out);
    }
    case Prim::broadcast_in_dim: {
      std::vector<std::int64_t> s(p.shape.size(), 0);
      for (std::size_t i = 0; i < a.ndim(); ++i) s[p.dims[i]] = a.shape[i] == 1 ? 0 : st[i];
      return gather_copy(d, op.out[0].shape, 0, s, in[0], out);
    }
    case Prim::slice: {
      std::int64_t base = 0;
      std::vector<std::int64_t> s(a.ndim());
      for (std::size_t i = 0; i < a.ndim(); ++i) {
        base += p.start[i] * st[i];
        s[i] = st[i] * p.strides[i];
      }
      return gather_copy(d, op.out[0].shape, base, s, in[0], out);
    }
    case Prim::rev: {
      std::int64_t base = 0;
      std::vector<std::int64_t> s = st;
      for (auto ax : p.axes)
        if (a.shape[ax] > 0) {
          base += (a.shape[ax] - 1) * st[ax];
          s[ax] = -st[ax];
        }
      return gather_copy(d, op.out[0].shape, base, s, in[0], out);
    }
    case Prim::concatenate: {
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t i = 0; i < p.axis; ++i) outer *= a.shape[i];
      for (std::size_t i = p.axis + 1; i < a.ndim(); ++i) inner *= a.shape[i];
      std::byte* y = out;
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::size_t k = 0; k < in.size(); ++k) {
          const std::size_t chunk = static_cast<std::size_t>(op.in[k].shape[p.axis] * inner) * es;
          if (chunk) std::memcpy(y, in[k] + o * chunk, chunk);
          y += chunk;
        }
      return;
    }
    case Prim::pad: {
      const auto ost = row_major_strides(op.out[0].shape);
      std::int64_t base = 0;
      for (std::size_t i = 0; i < a.ndim(); ++i) base += p.lo[i] * ost[i];
      visit_dtype(d, [&]<class T>() {
        T* y = cout<T>(out);
        const T* x = cin<T>(in[0]);
        std::fill(y, y + op.out[0].size(), scalar::convert<T>(p.value));
        strided_loop<2>(a.shape, {st, ost}, {0, base}, [&](auto o) { y[o[1]] = x[o[0]]; });
      });
      return;
    }
    default: throw Error("cpu: not a movement primitive");
  }
}

void eval_iota(const Op& op, std::byte* out) {
  const Shape& s = op.out[0].shape;
  const auto st = row_major_strides(s);
  const auto ax = op.params.axis;
  visit_dtype(op.out[0].dtype, [&]<class T>() {
    T* y = cout<T>(out);
    for (std::int64_t i = 0, n = numel(s); i < n; ++i) y[i] = static_cast<T>((i / st[ax]) % s[ax]);
  });
}

}  // namespace

void cpu_execute(const Op& op, std::span<const std::byte* const> in, std::span<std::byte* const> out) {
  switch (op.prim) {
  JX_CASES_ELEMENTWISE_UNARY:
  JX_CASES_ELEMENTWISE_BINARY:
  case Prim::select: return eval_elementwise(op, in, out[0]);
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod: return eval_reduce(op, in[0], out[0]);
    case Prim::argmax:
    case Prim::argmin: return eval_arg(op, in[0], out[0]);
    case Prim::dot_general:
      return eval_dot_general(op, in[0], in[1], out[0]);
    JX_CASES_MOVEMENT:
      return eval_movement(op, in, out[0]);
    case Prim::iota: return eval_iota(op, out[0]);
    case Prim::cholesky:
    case Prim::triangular_solve:
    case Prim::lu:
    case Prim::inv: return cpu_linalg(op, in, out);
    case Prim::scan:
    case Prim::associative_scan:
    case Prim::while_loop:
    case Prim::cond:
      throw Error(
          fmt::format("cpu: {} is run by the runtime (its body's primitives reach the backend), not by cpu_execute",
                      prim_name(op.prim)));
  }
}

}  // namespace jx
