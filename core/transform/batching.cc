// vmap: each tracer carries a value with the mapped axis at `bdim` (nullopt: not mapped).
// Rules first move every mapped axis to the front (bdim 0) and, where operands must agree,
// broadcast unmapped operands along a new front axis; then each primitive only needs its
// params shifted by one axis. Linear-algebra routines batch over leading axes natively.
#include <fmt/format.h>

#include "core/transform/rules.h"
#include "core/transform/rules_util.h"

namespace jx {
namespace {

struct BatchTracer final : Tracer {
  BatchTracer(std::shared_ptr<MainTrace> m, Array v, std::int64_t bdim)
      : Tracer(std::move(m), unbatched_aval(v.aval(), bdim)), val(std::move(v)), bdim(bdim) {}
  static AVal unbatched_aval(AVal a, std::int64_t bdim) {
    a.shape.erase(a.shape.begin() + bdim);
    return a;
  }
  Array val;
  std::int64_t bdim;
};

std::vector<std::int64_t> shifted(const std::vector<std::int64_t>& v, std::int64_t by = 1) {
  std::vector<std::int64_t> r;
  for (auto x : v) r.push_back(x + by);
  return r;
}

class BatchTrace final : public MainTrace {
 public:
  explicit BatchTrace(std::int64_t size) : size_(size) {}
  std::string_view kind() const override { return "vmap"; }

  Array pack(Array v, std::optional<std::int64_t> bdim) {
    if (!bdim) return v;
    return Array(std::make_shared<BatchTracer>(shared_from_this(), std::move(v), *bdim));
  }
  std::pair<Array, std::optional<std::int64_t>> unpack(const Array& x) const {
    if (auto* t = tracer_of<BatchTracer>(x, *this)) return {t->val, t->bdim};
    return {x, std::nullopt};
  }
  // Value with the mapped axis in front, broadcasting an unmapped one.
  Array front(const Array& x) const {
    auto [v, b] = unpack(x);
    return batch_axis_at(v, b, 0, size_);
  }

  std::vector<Array> process(Prim p, const std::vector<Array>& args, const PrimParams& params) override {
    std::vector<Array> vals;
    std::vector<std::optional<std::int64_t>> bd;
    for (const Array& a : args) {
      auto [v, b] = unpack(a);
      vals.push_back(v);
      bd.push_back(b);
    }
    auto out = rule(p, args, vals, bd, params);
    std::vector<Array> res;
    for (auto& [v, b] : out) res.push_back(pack(v, b));
    return res;
  }

 private:
  using Out = std::vector<std::pair<Array, std::optional<std::int64_t>>>;

  Out all_front(Prim p, const std::vector<Array>& args, const PrimParams& params) {
    std::vector<Array> f;
    for (const Array& a : args) f.push_back(front(a));
    Out o;
    for (auto& y : bind(p, f, params)) o.push_back({y, 0});
    return o;
  }

  Out rule(Prim p, const std::vector<Array>& args, const std::vector<Array>& vals,
           const std::vector<std::optional<std::int64_t>>& bd, const PrimParams& params) {
    PrimParams q = params;
    switch (p) {
    JX_CASES_ELEMENTWISE_UNARY:
      return {{bind1(p, {vals[0]}, params), bd[0]}};  // elementwise: the axis stays where it is
    JX_CASES_ELEMENTWISE_BINARY:
    case Prim::select:
    case Prim::concatenate:
    case Prim::cholesky:
    case Prim::lu:
    case Prim::inv:
    case Prim::triangular_solve:
      if (p == Prim::concatenate) q.axis += 1;
      return all_front(p, args, q);
      case Prim::reduce_sum:
      case Prim::reduce_max:
      case Prim::reduce_min:
      case Prim::reduce_prod:
      case Prim::rev: q.axes = shifted(params.axes); return all_front(p, args, q);
      case Prim::argmax:
      case Prim::argmin: q.axis += 1; return all_front(p, args, q);
      case Prim::reshape: q.shape.insert(q.shape.begin(), size_); return all_front(p, args, q);
      case Prim::transpose:
        q.perm = shifted(params.perm);
        q.perm.insert(q.perm.begin(), 0);
        return all_front(p, args, q);
      case Prim::broadcast_in_dim:
        q.shape.insert(q.shape.begin(), size_);
        q.dims = shifted(params.dims);
        q.dims.insert(q.dims.begin(), 0);
        return all_front(p, args, q);
      case Prim::slice:
        q.start.insert(q.start.begin(), 0);
        q.limit.insert(q.limit.begin(), size_);
        q.strides.insert(q.strides.begin(), 1);
        return all_front(p, args, q);
      case Prim::pad:
        q.lo.insert(q.lo.begin(), 0);
        q.hi.insert(q.hi.begin(), 0);
        return all_front(p, args, q);
      case Prim::iota: return {{bind1(p, {}, params), std::nullopt}};
      case Prim::scan:
      case Prim::associative_scan:
      case Prim::while_loop:
      case Prim::cond: return control_batch(p, vals, bd, size_, params);
      case Prim::dot_general: {
        // Both mapped: a new leading batch dim. One mapped: its axis is a free dim of that operand.
        Array l = bd[0] ? batch_axis_at(vals[0], bd[0], 0, size_) : vals[0];
        Array r = bd[1] ? batch_axis_at(vals[1], bd[1], 0, size_) : vals[1];
        const std::int64_t sl = bd[0] ? 1 : 0, sr = bd[1] ? 1 : 0;
        q.lhs_contract = shifted(params.lhs_contract, sl);
        q.lhs_batch = shifted(params.lhs_batch, sl);
        q.rhs_contract = shifted(params.rhs_contract, sr);
        q.rhs_batch = shifted(params.rhs_batch, sr);
        if (bd[0] && bd[1]) {
          q.lhs_batch.insert(q.lhs_batch.begin(), 0);
          q.rhs_batch.insert(q.rhs_batch.begin(), 0);
          return {{bind1(p, {l, r}, q), 0}};
        }
        const auto nb = static_cast<std::int64_t>(params.lhs_batch.size());
        if (bd[0]) return {{bind1(p, {l, r}, q), nb}};
        const auto lhs_free =
            static_cast<std::int64_t>(vals[0].ndim() - params.lhs_batch.size() - params.lhs_contract.size());
        return {{bind1(p, {l, r}, q), nb + lhs_free}};
      }
    }
    throw Error(fmt::format("vmap: no rule for {}", prim_name(p)));
  }

  std::int64_t size_;
};

}  // namespace

AVal with_batch_axis(AVal a, std::int64_t at, std::int64_t size) {
  a.shape.insert(a.shape.begin() + at, size);
  return a;
}

Array batch_axis_at(const Array& v, std::optional<std::int64_t> b, std::int64_t at, std::int64_t size) {
  if (b) return *b == at ? v : np::moveaxis(v, *b, at);
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(v.ndim()); ++d) dims.push_back(d < at ? d : d + 1);
  return lax::broadcast_in_dim(v, with_batch_axis(v.aval(), at, size).shape, dims);
}

std::vector<std::pair<Array, std::optional<std::int64_t>>> vmap_partial(
    const FlatFn& fn, const std::vector<std::optional<std::int64_t>>& in_axes, std::int64_t size,
    const std::vector<Array>& args) {
  if (in_axes.size() != args.size())
    throw ShapeError(fmt::format("vmap: in_axes has {} entries for {} arguments", in_axes.size(), args.size()));
  auto trace = std::make_shared<BatchTrace>(size);
  MainScope scope(trace);
  std::vector<Array> in;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) {
      in.push_back(args[i]);
      continue;
    }
    const int ax = normalize_axis(*in_axes[i], args[i].ndim(), "vmap", fmt::format("in_axes[{}]", i));
    if (args[i].shape()[ax] != size)
      throw ShapeError(fmt::format("vmap: argument {} is {}, {} long on its mapped axis {}; the batch is {}", i,
                                   args[i].aval().str(), args[i].shape()[ax], ax, size));
    in.push_back(trace->pack(args[i], ax));
  }
  std::vector<std::pair<Array, std::optional<std::int64_t>>> res;
  for (const Array& o : fn(in)) res.push_back(trace->unpack(o));
  return res;
}

FlatFn vmap_flat(FlatFn fn, std::vector<std::optional<std::int64_t>> in_axes, std::vector<std::int64_t> out_axes) {
  return [fn = std::move(fn), in_axes = std::move(in_axes),
          out_axes = std::move(out_axes)](const std::vector<Array>& args) {
    if (in_axes.size() != args.size())
      throw ShapeError(fmt::format("vmap: in_axes has {} entries for {} arguments", in_axes.size(), args.size()));
    std::optional<std::int64_t> size;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!in_axes[i]) continue;
      const auto n =
          args[i].shape()[normalize_axis(*in_axes[i], args[i].ndim(), "vmap", fmt::format("in_axes[{}]", i))];
      if (size && *size != n)
        throw ShapeError(fmt::format("vmap: inconsistent sizes for the mapped axes: {} and {} (argument {} is {})",
                                     *size, n, i, args[i].aval().str()));
      size = n;
    }
    if (!size) throw ShapeError("vmap: in_axes must map at least one argument");
    auto outs = vmap_partial(fn, in_axes, *size, args);
    std::vector<Array> res;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      auto& [o, b] = outs[j];
      Array v = batch_axis_at(o, b, 0, *size);
      const std::int64_t oa = out_axes.size() == 1 ? out_axes[0] : out_axes.at(j);
      const int d = normalize_axis(oa, v.ndim(), "vmap", "out_axes");
      res.push_back(d == 0 ? v : np::moveaxis(v, 0, d));
    }
    return res;
  };
}

}  // namespace jx
