// Interprets the kernel IR: values are carried as doubles and rounded to each node's dtype after
// every operation (float32 ops use the float functions, int32 arithmetic wraps through int64),
// so results match the eager primitives. Elementwise kernels evaluate chunks of consecutive
// output elements; reductions evaluate chunks of the reduced index (several outputs' reductions
// in one chunk where they are short), accumulating in double as the eager reductions do.
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

using scalar::round_to;

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

// Element i of a buffer of T, as a double.
template <class T>
double read(const std::byte* base, std::int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
  return static_cast<double>(v);
}

// Writes n values, each rounded to d, to elements [at, at + n) of a buffer of dtype d.
void write(DType d, std::byte* base, std::int64_t at, const double* r, std::int64_t n) {
  visit_dtype(d, [&]<class T>() {
    for (std::int64_t e = 0; e < n; ++e) {
      const double v = round_to(d, r[e]);
      T x;
      if constexpr (std::is_same_v<T, std::uint8_t>)
        x = v != 0.0;
      else if constexpr (std::is_same_v<T, std::int32_t>)
        x = static_cast<T>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v)));
      else
        x = static_cast<T>(v);
      std::memcpy(base + (at + e) * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
    }
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

  // Evaluates `order` for n elements whose space indices are idx_of(e, d); acc[e] is element e's
  // reduce_result (null where the order has none).
  template <class IdxOf>
  void eval(const std::vector<int>& order, std::int64_t n, IdxOf idx_of, const double* acc) {
    for (int i : order) {
      const KNode& nd = k_.nodes[i];
      double* v = &vals_[static_cast<std::size_t>(i) * kChunk];
      switch (nd.kind) {
        case KNodeKind::load: {
          const KLoad& l = k_.loads[nd.load];
          const std::int64_t last = k_.inputs[l.buffer].size() - 1;
          const std::byte* base = in_[l.buffer];
          visit_dtype(k_.inputs[l.buffer].dtype, [&]<class T>() {
            for (std::int64_t e = 0; e < n; ++e) {
              std::int64_t off = l.offset;
              if (l.indexed)
                off = static_cast<std::int64_t>(
                    vals_[static_cast<std::size_t>(nd.a) * kChunk + static_cast<std::size_t>(e)]);
              else
                for (std::size_t s = 0; s < l.strides.size(); ++s) off += l.strides[s] * idx_of(e, s);
              if (l.clamp) off = std::clamp<std::int64_t>(off, 0, last);
              v[e] = read<T>(base, off);
            }
          });
          break;
        }
        case KNodeKind::constant:
          for (std::int64_t e = 0; e < n; ++e) v[e] = round_to(nd.dtype, nd.value);
          break;
        case KNodeKind::iota:
          for (std::int64_t e = 0; e < n; ++e) v[e] = static_cast<double>(idx_of(e, nd.dim));
          break;
        case KNodeKind::reduce_result:
          for (std::int64_t e = 0; e < n; ++e) v[e] = acc ? acc[e] : 0.0;
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

// A reduction's operator: the identity, one step of the accumulation (in double, as the eager
// reductions), and the result rounded to the body's dtype.
struct Reducer {
  Prim op;
  bool flt;
  DType dtype;
  double ident() const {
    return op == Prim::reduce_sum    ? 0.0
           : op == Prim::reduce_prod ? 1.0
           : op == Prim::reduce_max  ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity();
  }
  void add(double& acc, double x) const {
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
  double finish(double acc) const {
    if (!flt && (op == Prim::reduce_max || op == Prim::reduce_min) && std::isinf(acc)) acc = 0.0;
    return round_to(dtype, acc);
  }
};

// Space indices of the elements of one evaluation: idx[e * nd + d].
struct Indices {
  std::size_t nd;
  std::vector<std::int64_t> idx;
  auto of() const {
    return [this](std::int64_t e, std::size_t d) { return idx[static_cast<std::size_t>(e) * nd + d]; };
  }
  void set(std::int64_t e, const Walker& w) { set(e, w, w.idx.data()); }
  void set(std::int64_t e, const Walker& w, const std::int64_t* at) {  // w's dims at `at`
    for (std::size_t d = 0; d < w.dims.size(); ++d) idx[static_cast<std::size_t>(e) * nd + w.dims[d]] = at[d];
  }
  void zero(std::int64_t e, const Walker& w) {
    for (std::size_t d : w.dims) idx[static_cast<std::size_t>(e) * nd + d] = 0;
  }
};

void run_elementwise(const Kernel& k, Evaluator& ev, Walker& outer, Indices& ix, std::byte* out) {
  const auto order = k.reachable(k.body);
  const std::int64_t n_out = numel(outer.size);
  for (std::int64_t base = 0; base < n_out; base += kChunk) {
    const std::int64_t n = std::min(kChunk, n_out - base);
    for (std::int64_t e = 0; e < n; ++e, outer.next()) ix.set(e, outer);
    ev.eval(order, n, ix.of(), nullptr);
    const double* r = ev.values(k.body);
    write(k.out.dtype, out, base, r, n);
  }
}

// Reductions. Where the reduced extent n_in is at most half a chunk, one evaluation of the body
// covers g = kChunk / n_in outputs' whole reductions (and one of the epilogue their g results);
// otherwise each output's reduction runs in chunks of its own. Either way each output accumulates
// its elements in index order, so grouping changes no result bit.
void run_reduction(const Kernel& k, Evaluator& ev, Walker& outer, Walker& inner, Indices& ix, std::byte* out) {
  const auto body = k.reachable(k.body), epi = k.reachable(k.epilogue);
  const Reducer red{k.reduce_op, is_floating(k.nodes[k.body].dtype), k.nodes[k.body].dtype};
  const std::int64_t n_out = numel(outer.size), n_in = numel(inner.size);
  const std::int64_t group = n_in >= 1 && n_in <= kChunk / 2 ? kChunk / n_in : 1;
  std::vector<double> acc(static_cast<std::size_t>(group));
  const std::size_t od = outer.dims.size();
  std::vector<std::int64_t> outs(static_cast<std::size_t>(group) * od);  // each output's outer index
  auto out_idx = [&](std::int64_t j) { return outs.data() + static_cast<std::size_t>(j) * od; };
  for (std::int64_t o0 = 0; o0 < n_out; o0 += group) {
    const std::int64_t g = std::min(group, n_out - o0);
    for (std::int64_t j = 0; j < g; ++j, outer.next()) std::copy(outer.idx.begin(), outer.idx.end(), out_idx(j));
    if (group > 1) {
      for (std::int64_t j = 0; j < g; ++j) {
        inner.reset();
        for (std::int64_t e = j * n_in; e < (j + 1) * n_in; ++e, inner.next()) {
          ix.set(e, outer, out_idx(j));
          ix.set(e, inner);
        }
      }
      ev.eval(body, g * n_in, ix.of(), nullptr);
      const double* v = ev.values(k.body);
      for (std::int64_t j = 0; j < g; ++j) {
        double a = red.ident();
        for (std::int64_t e = j * n_in; e < (j + 1) * n_in; ++e) red.add(a, v[e]);
        acc[static_cast<std::size_t>(j)] = red.finish(a);
      }
    } else {
      double a = red.ident();
      inner.reset();
      for (std::int64_t base = 0; base < n_in; base += kChunk) {
        const std::int64_t n = std::min(kChunk, n_in - base);
        for (std::int64_t e = 0; e < n; ++e, inner.next()) {
          ix.set(e, outer, out_idx(0));
          ix.set(e, inner);
        }
        ev.eval(body, n, ix.of(), nullptr);
        const double* v = ev.values(k.body);
        for (std::int64_t e = 0; e < n; ++e) red.add(a, v[e]);
      }
      acc[0] = red.finish(a);
    }
    const double* result = acc.data();
    if (k.epilogue >= 0) {
      for (std::int64_t j = 0; j < g; ++j) {
        ix.set(j, outer, out_idx(j));
        ix.zero(j, inner);
      }
      ev.eval(epi, g, ix.of(), acc.data());
      result = ev.values(k.epilogue);
    }
    write(k.out.dtype, out, o0, result, g);
  }
}

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
  Indices ix{nd, std::vector<std::int64_t>(kChunk * nd, 0)};
  if (k.is_reduction())
    run_reduction(k, ev, outer, inner, ix, out);
  else
    run_elementwise(k, ev, outer, ix, out);
}

}  // namespace jx
