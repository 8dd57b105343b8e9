// Interprets the kernel IR: values are carried as doubles and rounded to each node's dtype after
// every operation (float32 ops use the float functions, int32 arithmetic wraps through int64),
// so results match the eager primitives. Elementwise kernels evaluate chunks of consecutive
// output elements; reductions evaluate chunks of the reduced index per output element,
// accumulating in double as the eager reductions do.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/backends/cpu/cpu_backend.h"
#include "core/prim/scalar_ops.h"

namespace jx {
namespace {

constexpr std::int64_t kChunk = 256;

double round_to(DType d, double v) {
  switch (d) {
    case DType::float32: return static_cast<float>(v);
    case DType::float64: return v;
    case DType::int32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v))));
    case DType::bool_: return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

// One elementwise node over a chunk of n elements: operands a, b, c (values of dtype `in`: the
// branches' for select) into v, by the scalar table (core/prim/scalar_ops.h), so the result is
// the eager primitive's bit for bit.
void alu(Prim p, DType in, DType out, const double* a, const double* b, const double* c, double* v, std::int64_t n) {
  if (p == Prim::convert) {
    visit_dtype(in, [&]<class S>() {
      visit_dtype(out, [&]<class T>() {
        for (std::int64_t e = 0; e < n; ++e) v[e] = static_cast<double>(scalar::convert<T>(static_cast<S>(a[e])));
      });
    });
    return;
  }
  visit_dtype(in, [&]<class T>() {
    scalar::with_elementwise(p, [&]<Prim P>() {
      if constexpr (P == Prim::select)  // a: the condition (0/1), b and c the branches
        for (std::int64_t e = 0; e < n; ++e) v[e] = scalar::apply<P, T>(T(a[e]), T(b[e]), T(c[e]));
      else if constexpr (P != Prim::convert)
        for (std::int64_t e = 0; e < n; ++e) v[e] = scalar::apply<P, T>(T(a[e]), T(b[e]));
    });
  });
}

double read(DType d, const std::byte* base, std::int64_t i) {
  return visit_dtype(d, [&]<class T>() {
    T v;
    std::memcpy(&v, base + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    return static_cast<double>(v);
  });
}

void write(DType d, std::byte* base, std::int64_t i, double v) {
  visit_dtype(d, [&]<class T>() {
    T x;
    if constexpr (std::is_same_v<T, std::uint8_t>)
      x = v != 0.0;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      x = static_cast<T>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v)));
    else
      x = static_cast<T>(v);
    std::memcpy(base + i * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
  });
}

// Odometer over a subset of the space dims.
struct Walker {
  std::vector<std::int64_t> dims, size, idx;
  void reset() { std::fill(idx.begin(), idx.end(), 0); }
  void next() {
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < size[d]) return;
      idx[d] = 0;
    }
  }
};

class Evaluator {
 public:
  Evaluator(const Kernel& k, std::span<const std::byte* const> in) : k_(k), in_(in), vals_(k.nodes.size() * kChunk) {}

  // Evaluates `order` for n elements whose space indices are idx_of(e, d); acc for reduce_result.
  template <class IdxOf>
  void eval(const std::vector<int>& order, std::int64_t n, IdxOf idx_of, double acc) {
    for (int i : order) {
      const KNode& nd = k_.nodes[i];
      double* v = &vals_[static_cast<std::size_t>(i) * kChunk];
      switch (nd.kind) {
        case KNodeKind::load: {
          const KLoad& l = k_.loads[nd.load];
          const DType d = k_.inputs[l.buffer].dtype;
          for (std::int64_t e = 0; e < n; ++e) {
            std::int64_t off = l.offset;
            if (l.indexed)
              off = static_cast<std::int64_t>(
                  vals_[static_cast<std::size_t>(nd.a) * kChunk + static_cast<std::size_t>(e)]);
            else
              for (std::size_t s = 0; s < l.strides.size(); ++s) off += l.strides[s] * idx_of(e, s);
            if (l.clamp) off = std::clamp<std::int64_t>(off, 0, k_.inputs[l.buffer].size() - 1);
            v[e] = read(d, in_[l.buffer], off);
          }
          break;
        }
        case KNodeKind::constant:
          for (std::int64_t e = 0; e < n; ++e) v[e] = round_to(nd.dtype, nd.value);
          break;
        case KNodeKind::iota:
          for (std::int64_t e = 0; e < n; ++e) v[e] = static_cast<double>(idx_of(e, nd.dim));
          break;
        case KNodeKind::reduce_result:
          for (std::int64_t e = 0; e < n; ++e) v[e] = acc;
          break;
        case KNodeKind::alu: {
          const double* a = &vals_[static_cast<std::size_t>(nd.a) * kChunk];
          const double* b = nd.b >= 0 ? &vals_[static_cast<std::size_t>(nd.b) * kChunk] : a;
          const double* c = nd.c >= 0 ? &vals_[static_cast<std::size_t>(nd.c) * kChunk] : a;
          // select's operand dtype is that of its branches; comparisons that of their operands
          const DType in = nd.prim == Prim::select ? k_.nodes[nd.b].dtype : k_.nodes[nd.a].dtype;
          alu(nd.prim, in, nd.dtype, a, b, c, v, n);
          break;
        }
      }
    }
  }
  const double* values(int node) const { return &vals_[static_cast<std::size_t>(node) * kChunk]; }

 private:
  const Kernel& k_;
  std::span<const std::byte* const> in_;
  std::vector<double> vals_;
};

}  // namespace

void cpu_run_kernel(const Kernel& k, std::span<const std::byte* const> in, std::byte* out) {
  Evaluator ev(k, in);
  const std::size_t nd = k.space.size();
  Walker outer, inner;
  for (std::size_t d = 0; d < nd; ++d) {
    const bool red =
        std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
    (red ? inner : outer).dims.push_back(static_cast<std::int64_t>(d));
    (red ? inner : outer).size.push_back(k.space[d]);
  }
  outer.idx.assign(outer.dims.size(), 0);
  inner.idx.assign(inner.dims.size(), 0);
  const std::int64_t n_out = numel(outer.size), n_in = numel(inner.size);
  std::vector<std::int64_t> idx(kChunk * nd, 0);  // space index of each element of a chunk
  auto idx_of = [&](std::int64_t e, std::size_t d) { return idx[static_cast<std::size_t>(e) * nd + d]; };
  if (!k.is_reduction()) {
    const auto order = k.reachable(k.body);
    for (std::int64_t base = 0; base < n_out; base += kChunk) {
      const std::int64_t n = std::min(kChunk, n_out - base);
      for (std::int64_t e = 0; e < n; ++e, outer.next())
        for (std::size_t d = 0; d < nd; ++d) idx[e * nd + d] = outer.idx[d];
      ev.eval(order, n, idx_of, 0.0);
      const double* r = ev.values(k.body);
      for (std::int64_t e = 0; e < n; ++e) write(k.out.dtype, out, base + e, round_to(k.out.dtype, r[e]));
    }
    return;
  }
  const auto body = k.reachable(k.body), epi = k.reachable(k.epilogue);
  const Prim op = k.reduce_op;
  const bool flt = is_floating(k.nodes[k.body].dtype);
  const double ident = op == Prim::reduce_sum    ? 0.0
                       : op == Prim::reduce_prod ? 1.0
                       : op == Prim::reduce_max  ? -std::numeric_limits<double>::infinity()
                                                 : std::numeric_limits<double>::infinity();
  for (std::int64_t o = 0; o < n_out; ++o, outer.next()) {
    double acc = ident;
    inner.reset();
    for (std::int64_t base = 0; base < n_in; base += kChunk) {
      const std::int64_t n = std::min(kChunk, n_in - base);
      for (std::int64_t e = 0; e < n; ++e, inner.next()) {
        for (std::size_t d = 0; d < outer.dims.size(); ++d) idx[e * nd + outer.dims[d]] = outer.idx[d];
        for (std::size_t d = 0; d < inner.dims.size(); ++d) idx[e * nd + inner.dims[d]] = inner.idx[d];
      }
      ev.eval(body, n, idx_of, 0.0);
      const double* v = ev.values(k.body);
      for (std::int64_t e = 0; e < n; ++e) {
        const double x = v[e];
        switch (op) {
          case Prim::reduce_sum: acc += x; break;
          case Prim::reduce_prod:
            acc = flt ? acc * x : static_cast<double>(static_cast<std::int64_t>(acc) * static_cast<std::int64_t>(x));
            break;
          default:
            if (std::isnan(acc)) break;
            if (std::isnan(x) || (op == Prim::reduce_max ? x > acc : x < acc)) acc = x;
        }
      }
    }
    if (!flt && (op == Prim::reduce_max || op == Prim::reduce_min) && std::isinf(acc)) acc = 0.0;
    const double red = round_to(k.nodes[k.body].dtype, acc);
    double result = red;
    if (k.epilogue >= 0) {
      for (std::size_t d = 0; d < outer.dims.size(); ++d) idx[outer.dims[d]] = outer.idx[d];
      for (std::size_t d = 0; d < inner.dims.size(); ++d) idx[inner.dims[d]] = 0;
      ev.eval(epi, 1, idx_of, red);
      result = ev.values(k.epilogue)[0];
    }
    write(k.out.dtype, out, o, round_to(k.out.dtype, result));
  }
}

}  // namespace jx
