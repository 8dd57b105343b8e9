#include <fmt/format.h>

#include "core/replay/policy.h"
#include "core/trace/builder.h"
#include "core/np/np.h"
#include "core/trace/autodiff.h"

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

  std::vector<Array> process(Prim p, const std::vector<Array>& args, const Params& params) override {
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
      for (std::size_t i = 0; i < y.size(); ++i) out.push_back(pack(y[i], is_floating(y[i].dtype()) ? std::optional<Array>(ty[i]) : std::nullopt));
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
      throw ShapeError(fmt::format("jvp: primal {} is {} but its tangent is {}", i, primals[i].aval().str(), tangents[i].aval().str()));
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

std::pair<std::vector<Array>, std::vector<Array>> value_and_grad_forward_flat(const FlatFn& fn, const std::vector<Array>& x) {
  std::vector<Array> y, g;
  std::vector<Array> zero;
  for (const Array& a : x) zero.push_back(np::zeros_like(a));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t n = x[i].size();
    std::vector<Array> column;  // d y[0] / d x[i][s], s in row-major order
    const Array basis = n ? np::eye(n, {}, 0, x[i].dtype()) : Array();
    for (std::int64_t s = 0; s < n; ++s) {
      std::vector<Array> t = zero;
      t[i] = np::reshape(np::index(basis, {s}), x[i].shape());
      auto [out, dout] = jvp_flat(fn, x, t);
      if (y.empty()) y = out;
      column.push_back(dout[0]);
    }
    g.push_back(n ? np::reshape(np::stack(column), x[i].shape()) : np::zeros_like(x[i]));
  }
  if (y.empty()) y = fn(x);  // no scalar to differentiate by
  return {y, g};
}

}  // namespace jx
