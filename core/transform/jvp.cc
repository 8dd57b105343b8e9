#include <fmt/format.h>

#include <map>

#include "core/replay/policy.h"
#include "core/trace/builder.h"
#include "core/np/np.h"
#include "core/transform/rules.h"

namespace jx {
namespace {

// Forward mode: each tracer carries a primal (a lower-level value) and a tangent (nullopt is a
// symbolic zero). Primal computations go to lower levels; tangent computations are bound on
// the tangents, so under linearize they are recorded by the jaxpr builder below this trace.
struct JvpTracer final : Tracer {
  JvpTracer(std::shared_ptr<MainTrace> m, Array p, std::optional<Array> t)
      : Tracer(std::move(m), p.aval()), primal(std::move(p)), tangent(std::move(t)) {}
  Array primal;
  std::optional<Array> tangent;
};

class JvpTrace final : public MainTrace {
 public:
  explicit JvpTrace(bool linearizing) : linearizing(linearizing) {}
  std::string_view kind() const override { return "jvp"; }
  // under linearize the tangent equations are recorded for transposition: a control rule must
  // keep them apart from the primal ones
  const bool linearizing;

  Array pack(Array p, std::optional<Array> t) {
    if (!t) return p;  // constant w.r.t. this jvp: hand back the lower-level value
    return Array(std::make_shared<JvpTracer>(shared_from_this(), std::move(p), std::move(t)));
  }

  std::pair<Array, std::optional<Array>> unpack(const Array& x) const {
    if (auto* t = tracer_of<JvpTracer>(x, *this)) return {t->primal, t->tangent};
    return {x, std::nullopt};
  }

  std::vector<Array> process(Prim p, const std::vector<Array>& args, const PrimParams& params) override {
    std::vector<Array> x;
    std::vector<std::optional<Array>> t;
    bool any = false;
    const bool borrow = replay::policy().borrowed_residuals;
    for (const Array& a : args) {
      auto [pr, tg] = unpack(a);
      if (borrow && tg) note_borrow(pr, a.tracer());
      any = any || tg.has_value();
      x.push_back(std::move(pr));
      t.push_back(std::move(tg));
    }
    if (!any) return bind(p, x, params);
    if (prim_kind(p) == PrimKind::control) {
      auto [y, ty] = control_jvp(p, x, t, params, linearizing);
      std::vector<Array> out;
      for (std::size_t i = 0; i < y.size(); ++i)
        out.push_back(pack(y[i], is_floating(y[i].dtype()) ? std::optional<Array>(ty[i]) : std::nullopt));
      return out;
    }
    std::vector<Array> y = bind(p, x, params);
    auto ty = jvp_rule(p, x, t, y, params);
    std::vector<Array> out;
    for (std::size_t i = 0; i < y.size(); ++i)
      out.push_back(pack(y[i], is_floating(y[i].dtype()) ? ty[i] : std::nullopt));
    return out;
  }
};

}  // namespace

bool is_forward_jvp(const MainTrace& m) {
  const auto* j = dynamic_cast<const JvpTrace*>(&m);
  return j && !j->linearizing;
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& fn, const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents, bool linearizing) {
  if (primals.size() != tangents.size())
    throw ShapeError(fmt::format("jvp: {} primals but {} tangents", primals.size(), tangents.size()));
  auto trace = std::make_shared<JvpTrace>(linearizing);
  MainScope scope(trace);
  std::vector<Array> in;
  for (std::size_t i = 0; i < primals.size(); ++i) {
    if (!(primals[i].aval() == tangents[i].aval()))
      throw ShapeError(fmt::format("jvp: primal {} is {} but its tangent is {}", i, primals[i].aval().str(),
                                   tangents[i].aval().str()));
    in.push_back(is_floating(primals[i].dtype()) ? trace->pack(primals[i], tangents[i]) : primals[i]);
  }
  std::vector<Array> out = fn(in), y, ty;
  for (const Array& o : out) {
    auto [p, t] = trace->unpack(o);
    ty.push_back(t ? *t : np::zeros_like(p));
    y.push_back(std::move(p));
  }
  return {y, ty};
}

std::pair<std::vector<Array>, std::vector<Array>> value_and_grad_forward_flat(const FlatFn& fn,
                                                                              const std::vector<Array>& x) {
  // One jvp, vmapped over the P scalars of x: leaf i's tangents are columns off_i .. off_i + n_i
  // of the P x P identity. The primal work does not depend on the mapped tangents, so it runs
  // once, and each associative scan runs once with its tangent leaves batched.
  std::vector<std::int64_t> off{0};
  for (const Array& a : x) off.push_back(off.back() + a.size());
  const std::int64_t P = off.back();
  if (P == 0) {  // no scalar to differentiate by
    std::vector<Array> g;
    for (const Array& a : x) g.push_back(np::zeros_like(a));
    return {fn(x), g};
  }
  std::vector<Array> basis;
  std::vector<std::optional<std::int64_t>> axes;
  std::map<DType, Array> eye;  // one P x P identity per dtype among the leaves
  for (std::size_t i = 0; i < x.size(); ++i) {
    Shape s = x[i].shape();
    s.insert(s.begin(), P);
    auto it = eye.find(x[i].dtype());
    if (it == eye.end()) it = eye.emplace(x[i].dtype(), np::eye(P, {}, 0, x[i].dtype())).first;
    basis.push_back(np::reshape(lax::slice(it->second, {0, off[i]}, {P, off[i + 1]}, {1, 1}), s));
    axes.push_back(0);
  }
  std::size_t ny = 0;
  auto outs = vmap_partial(
      [&](const std::vector<Array>& t) {
        auto [y, ty] = jvp_flat(fn, x, t);
        ny = y.size();
        y.push_back(ty.at(0));
        return y;
      },
      axes, P, basis);
  std::vector<Array> y, g;
  for (std::size_t j = 0; j < ny; ++j) {  // the values (unbatched: they do not depend on the tangents)
    auto& [v, b] = outs[j];
    y.push_back(b ? np::index(np::moveaxis(v, *b, 0), {std::int64_t{0}}) : v);
  }
  auto& [d, db] = outs[ny];  // d y[0] / d x, [P] once the axis is in front
  const Array col = db ? np::moveaxis(d, *db, 0) : lax::broadcast_in_dim(d, {P}, {});
  for (std::size_t i = 0; i < x.size(); ++i) {  // in the argument's dtype, as reverse mode gives it
    Array gi = np::reshape(lax::slice(col, {off[i]}, {off[i + 1]}, {1}), x[i].shape());
    g.push_back(is_floating(x[i].dtype()) && gi.dtype() != x[i].dtype() ? lax::convert_element_type(gi, x[i].dtype())
                                                                        : gi);
  }
  return {y, g};
}

}  // namespace jx
