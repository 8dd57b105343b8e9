#pragma once
// (Pairs are unpacked into references, not structured bindings: lambdas capture them, which
// clang 14 — the fuzz build — does not allow for bindings.)
// Typed transformations over pytrees: jvp, linearize, vjp, grad, value_and_grad (argnums,
// has_aux), jacfwd, jacrev, hessian, vmap, make_jaxpr, stop_gradient. Each flattens its
// arguments to leaves, runs the flat machinery of core/trace, and rebuilds typed results.
#include <array>
#include <fmt/format.h>
#include <memory>
#include <tuple>
#include <type_traits>

#include "core/jit/jit.h"
#include "core/np/np.h"
#include "core/transform/autodiff.h"
#include "core/trace/pytree.h"

namespace jx {

template <std::size_t... I>
struct Argnums {};
template <std::size_t... I>
inline constexpr Argnums<I...> argnums{};
struct HasAux {};
inline constexpr HasAux has_aux{};
// value_and_grad / grad in forward mode: one jvp vmapped over the basis of the differentiated
// arguments' P scalars (f is traced once; its primal work runs once, its tangent work P-wide; no
// residuals are kept and nothing is transposed). For few parameters: an associative_scan under
// it stays one scan of (element, P tangents), where reverse mode differentiates through its
// odd/even recursion.
struct ForwardMode {};
inline constexpr ForwardMode forward_mode{};

inline Array stop_gradient(const Array& x) { return lax::stop_gradient(x); }

namespace detail {

inline std::span<const Array> take(const std::vector<Array>& v, std::size_t& pos, std::size_t n) {
  std::span<const Array> s(v.data() + pos, n);
  pos += n;
  return s;
}

// Leaves and tree structure of several typed arguments.
template <class... A>
std::pair<std::vector<Array>, std::vector<TreeDef>> flatten_all(const A&... a) {
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  (
      [&] {
        auto l_d = flatten(a);
        auto& l = std::get<0>(l_d);
        auto& d = std::get<1>(l_d);
        leaves.insert(leaves.end(), l.begin(), l.end());
        defs.push_back(std::move(d));
      }(),
      ...);
  return {leaves, defs};
}

template <class... A>
std::tuple<A...> unflatten_all(const std::vector<TreeDef>& defs, const std::vector<Array>& leaves) {
  std::size_t pos = 0, k = 0;
  return std::tuple<A...>{[&] {
    const TreeDef& d = defs[k++];
    return unflatten<A>(d, take(leaves, pos, d.num_leaves()));
  }()...};
}

template <class R>
std::vector<Array> out_leaves(const R& r, TreeDef& def) {
  auto l_d = flatten(r);
  auto& l = std::get<0>(l_d);
  auto& d = std::get<1>(l_d);
  def = std::move(d);
  return l;
}

inline void require_float(const std::vector<Array>& leaves, const char* what) {
  for (std::size_t i = 0; i < leaves.size(); ++i)
    if (!is_floating(leaves[i].dtype()))
      throw ShapeError(fmt::format("{}: can only differentiate with respect to floating-point arrays, got {} (leaf {})",
                                   what, leaves[i].aval().str(), i));
}

}  // namespace detail

// ---- make_jaxpr ----
template <class F>
auto make_jaxpr(F f) {
  return [f](const auto&... args) {
    auto leaves_defs = detail::flatten_all(args...);
    auto& leaves = std::get<0>(leaves_defs);
    auto& defs = std::get<1>(leaves_defs);
    std::vector<AVal> avals;
    for (const Array& a : leaves) avals.push_back(a.aval());
    return make_jaxpr_flat(
        [&](const std::vector<Array>& in) {
          auto typed = detail::unflatten_all<std::decay_t<decltype(args)>...>(defs, in);
          TreeDef od;
          return detail::out_leaves(std::apply(f, typed), od);
        },
        avals);
  };
}

// ---- jvp / linearize ----
template <class F, class... A>
auto jvp(F f, const std::tuple<A...>& primals, const std::tuple<A...>& tangents) {
  using R = std::decay_t<std::invoke_result_t<F, const A&...>>;
  auto x_defs = std::apply([](const auto&... a) { return detail::flatten_all(a...); }, primals);
  auto& x = std::get<0>(x_defs);
  auto& defs = std::get<1>(x_defs);
  auto t_tdefs = std::apply([](const auto&... a) { return detail::flatten_all(a...); }, tangents);
  auto& t = std::get<0>(t_tdefs);
  auto& tdefs = std::get<1>(t_tdefs);
  if (defs != tdefs) throw ShapeError("jvp: primals and tangents have different tree structures");
  TreeDef od;
  auto y_ty = jvp_flat(
      [&](const std::vector<Array>& in) {
        return detail::out_leaves(std::apply(f, detail::unflatten_all<A...>(defs, in)), od);
      },
      x, t);
  auto& y = std::get<0>(y_ty);
  auto& ty = std::get<1>(y_ty);
  return std::pair<R, R>{unflatten<R>(od, y), unflatten<R>(od, ty)};
}

// The linear map of f at the primals; owns its residuals until dispose() or destruction.
template <class R, class... A>
class Linearized {
 public:
  Linearized(LinearFn lin, TreeDef out, std::vector<TreeDef> in)
      : lin_(std::move(lin)), out_(std::move(out)), in_(std::move(in)) {}
  R operator()(const A&... tangents) const {
    auto t_defs = detail::flatten_all(tangents...);
    auto& t = std::get<0>(t_defs);
    auto& defs = std::get<1>(t_defs);
    if (defs != in_) throw ShapeError("linearize: tangents have a different tree structure than the primals");
    return unflatten<R>(out_, lin_(t));
  }
  void dispose() { lin_.dispose(); }
  const LinearFn& linear() const { return lin_; }

 protected:
  LinearFn lin_;
  TreeDef out_;
  std::vector<TreeDef> in_;
};

template <class F, class... A>
auto linearize(F f, const A&... primals) {
  using R = std::decay_t<std::invoke_result_t<F, const A&...>>;
  auto x_defs = detail::flatten_all(primals...);
  auto& x = std::get<0>(x_defs);
  auto& defs = std::get<1>(x_defs);
  TreeDef od;
  auto y_lin = linearize_flat(
      [&](const std::vector<Array>& in) {
        return detail::out_leaves(std::apply(f, detail::unflatten_all<A...>(defs, in)), od);
      },
      x);
  auto& y = std::get<0>(y_lin);
  auto& lin = std::get<1>(y_lin);
  return std::pair<R, Linearized<R, A...>>{unflatten<R>(od, y), Linearized<R, A...>(std::move(lin), od, defs)};
}

// ---- vjp ----
template <class R, class... A>
class Pullback : public Linearized<R, A...> {
 public:
  using Linearized<R, A...>::Linearized;
  // Cotangents of every argument, as a tuple of the argument types.
  std::tuple<A...> operator()(const R& ct) const {
    auto c_d = flatten(ct);
    auto& c = std::get<0>(c_d);
    auto& d = std::get<1>(c_d);
    if (d != this->out_) throw ShapeError("vjp: the cotangent has a different tree structure than the output");
    return detail::unflatten_all<A...>(this->in_, this->lin_.transpose(c));
  }
};

template <class F, class... A>
auto vjp(F f, const A&... primals) {
  using R = std::decay_t<std::invoke_result_t<F, const A&...>>;
  auto x_defs = detail::flatten_all(primals...);
  auto& x = std::get<0>(x_defs);
  auto& defs = std::get<1>(x_defs);
  TreeDef od;
  auto y_lin = vjp_flat(
      [&](const std::vector<Array>& in) {
        return detail::out_leaves(std::apply(f, detail::unflatten_all<A...>(defs, in)), od);
      },
      x);
  auto& y = std::get<0>(y_lin);
  auto& lin = std::get<1>(y_lin);
  return std::pair<R, Pullback<R, A...>>{unflatten<R>(od, y), Pullback<R, A...>(std::move(lin), od, defs)};
}

// ---- grad / value_and_grad ----
namespace detail {

// value_and_grad with respect to arguments I...; with Aux, f returns (scalar, aux pytree); Fwd:
// forward mode.
template <bool Aux, bool Fwd, std::size_t... I, class F, class... A>
auto value_and_grad_impl(const F& f, const A&... args) {
  using Tup = std::tuple<A...>;
  using Out = std::decay_t<std::invoke_result_t<F, const A&...>>;
  static_assert(sizeof...(I) > 0, "argnums must name at least one argument");
  static_assert(((I < sizeof...(A)) && ...), "argnums out of range");
  const Tup all{args...};
  std::vector<Array> x;
  std::vector<TreeDef> defs;
  (
      [&] {
        auto l_d = flatten(std::get<I>(all));
        auto& l = std::get<0>(l_d);
        auto& d = std::get<1>(l_d);
        x.insert(x.end(), l.begin(), l.end());
        defs.push_back(std::move(d));
      }(),
      ...);
  require_float(x, "grad");
  TreeDef aux_def;
  FlatFn fn = [&](const std::vector<Array>& leaves) {
    Tup a = all;
    std::size_t pos = 0, k = 0;
    (
        [&] {
          const TreeDef& d = defs[k++];
          std::get<I>(a) = unflatten<std::tuple_element_t<I, Tup>>(d, take(leaves, pos, d.num_leaves()));
        }(),
        ...);
    Out r = std::apply(f, a);
    std::vector<Array> out;
    if constexpr (Aux) {
      out.push_back(r.first);
      auto aux = out_leaves(r.second, aux_def);
      out.insert(out.end(), aux.begin(), aux.end());
    } else {
      out.push_back(r);
    }
    if (out[0].ndim() != 0 || !is_floating(out[0].dtype()))
      throw ShapeError(
          fmt::format("grad: the differentiated function must return a real scalar (rank-0 float array), got {}",
                      out[0].aval().str()));
    return out;
  };
  std::vector<Array> y, g;
  if constexpr (Fwd) {
    auto y_g = value_and_grad_forward_flat(fn, x);
    y = std::move(y_g.first);
    g = std::move(y_g.second);
  } else {
    auto y_lin = linearize_flat(fn, x);
    y = std::move(std::get<0>(y_lin));
    auto& lin = std::get<1>(y_lin);
    std::vector<Array> cts(y.size());
    cts[0] = np::ones({}, y[0].dtype());
    g = lin.transpose(cts);
    lin.dispose();  // release the residuals before returning
  }
  std::size_t pos = 0, k = 0;
  auto grads = std::tuple<std::tuple_element_t<I, Tup>...>{[&] {
    const TreeDef& d = defs[k++];
    return unflatten<std::tuple_element_t<I, Tup>>(d, take(g, pos, d.num_leaves()));
  }()...};
  auto value = [&] {
    if constexpr (Aux) {
      using AuxT = std::decay_t<decltype(std::declval<Out>().second)>;
      std::vector<Array> aux(y.begin() + 1, y.end());
      return std::pair<Array, AuxT>{y[0], unflatten<AuxT>(aux_def, aux)};
    } else {
      return y[0];
    }
  }();
  if constexpr (sizeof...(I) == 1)
    return std::pair{value, std::get<0>(grads)};
  else
    return std::pair{value, grads};
}

}  // namespace detail

// value_and_grad(f)(x...) -> (f(x...), df/dx_0); argnums<I...> picks the arguments (several
// give a tuple of gradients); has_aux: f returns (scalar, aux) and the value is (scalar, aux).
namespace detail {
// no argnums: the first argument
template <bool Aux, bool Fwd, class F, std::size_t... I>
auto value_and_grad_fn(F f, Argnums<I...>) {
  return [f](const auto&... args) {
    if constexpr (sizeof...(I) == 0)
      return value_and_grad_impl<Aux, Fwd, 0>(f, args...);
    else
      return value_and_grad_impl<Aux, Fwd, I...>(f, args...);
  };
}
}  // namespace detail
template <class F, std::size_t... I>
auto value_and_grad(F f, Argnums<I...> an = {}) {
  return detail::value_and_grad_fn<false, false>(f, an);
}
template <class F, std::size_t... I>
auto value_and_grad(F f, Argnums<I...> an, HasAux) {
  return detail::value_and_grad_fn<true, false>(f, an);
}
template <class F, std::size_t... I>
auto value_and_grad(F f, Argnums<I...> an, ForwardMode) {
  return detail::value_and_grad_fn<false, true>(f, an);
}
template <class F, std::size_t... I>
auto grad(F f, Argnums<I...> an = {}) {
  return [g = value_and_grad(f, an)](const auto&... args) { return g(args...).second; };
}
template <class F, std::size_t... I>
auto grad(F f, Argnums<I...> an, ForwardMode) {
  return [g = value_and_grad(f, an, forward_mode)](const auto&... args) { return g(args...).second; };
}
// With has_aux: returns (gradients, aux).
template <class F, std::size_t... I>
auto grad(F f, Argnums<I...> an, HasAux) {
  return [g = value_and_grad(f, an, has_aux)](const auto&... args) {
    auto v_gr = g(args...);
    auto& v = std::get<0>(v_gr);
    auto& gr = std::get<1>(v_gr);
    return std::pair{gr, v.second};
  };
}

// ---- vmap ----
// in_axes: one entry per argument applied to all its leaves (nullopt: not mapped; empty: all 0).
template <class F>
auto vmap(F f, std::vector<std::optional<std::int64_t>> in_axes = {}, std::int64_t out_axes = 0) {
  return [f, in_axes, out_axes](const auto&... args) {
    using R = std::decay_t<std::invoke_result_t<F, decltype(args)...>>;
    auto leaves_defs = detail::flatten_all(args...);
    auto& leaves = std::get<0>(leaves_defs);
    auto& defs = std::get<1>(leaves_defs);
    std::vector<std::optional<std::int64_t>> leaf_axes;
    if (!in_axes.empty() && in_axes.size() != defs.size())
      throw ShapeError(fmt::format("vmap: in_axes has {} entries for {} arguments", in_axes.size(), defs.size()));
    for (std::size_t i = 0; i < defs.size(); ++i)
      for (std::size_t k = 0; k < defs[i].num_leaves(); ++k) leaf_axes.push_back(in_axes.empty() ? 0 : in_axes[i]);
    TreeDef od;
    auto mapped = vmap_flat(
        [&](const std::vector<Array>& in) {
          return detail::out_leaves(std::apply(f, detail::unflatten_all<std::decay_t<decltype(args)>...>(defs, in)),
                                    od);
        },
        leaf_axes, {out_axes});
    auto y = mapped(leaves);
    return unflatten<R>(od, y);
  };
}

// ---- Jacobians (Array -> Array) ----
// J[out..., in...] = d out / d in.
template <class F>
auto jacfwd(F f) {
  return [f](const Array& x) {
    const std::int64_t n = x.size();
    Shape bs{n};
    bs.insert(bs.end(), x.shape().begin(), x.shape().end());
    Array basis = np::reshape(np::eye(n, {}, 0, x.dtype()), bs);
    FlatFn pushfwd = [&](const std::vector<Array>& t) {
      return jvp_flat([&](const std::vector<Array>& in) { return std::vector<Array>{f(in[0])}; }, {x}, t).second;
    };
    Array cols = vmap_flat(pushfwd, {0}, {-1})({basis})[0];  // [out..., n]
    Shape s(cols.shape().begin(), cols.shape().end() - 1);
    s.insert(s.end(), x.shape().begin(), x.shape().end());
    return np::reshape(cols, s);
  };
}

template <class F>
auto jacrev(F f) {
  return [f](const Array& x) {
    auto y_lin = vjp_flat([&](const std::vector<Array>& in) { return std::vector<Array>{f(in[0])}; }, {x});
    auto& y = std::get<0>(y_lin);
    auto& lin = std::get<1>(y_lin);
    const std::int64_t m = y[0].size();
    Shape bs{m};
    bs.insert(bs.end(), y[0].shape().begin(), y[0].shape().end());
    Array basis = np::reshape(np::eye(m, {}, 0, y[0].dtype()), bs);
    FlatFn pullback = [&](const std::vector<Array>& ct) { return lin.transpose(ct); };
    Array rows = vmap_flat(pullback, {0}, {0})({basis})[0];  // [m, in...]
    Shape s = y[0].shape();
    s.insert(s.end(), x.shape().begin(), x.shape().end());
    return np::reshape(rows, s);
  };
}

template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(f));
}

// ---- jit ----
namespace detail {
template <class T>
inline constexpr bool is_static_arg = std::is_arithmetic_v<T> || std::is_same_v<T, std::string>;

template <class T>
void jit_flatten(const T& x, std::vector<Array>& leaves, std::vector<TreeDef>& defs, std::string& sig) {
  if constexpr (is_static_arg<T>) {
    sig += fmt::format("static:{};", x);  // static arguments select their own trace
  } else {
    auto l_d = flatten(x);
    auto& l = std::get<0>(l_d);
    auto& d = std::get<1>(l_d);
    for (const Array& a : l) sig += a.aval().str() + ",";
    sig += d.str() + ";";
    leaves.insert(leaves.end(), l.begin(), l.end());
    defs.push_back(std::move(d));
  }
}

template <class T>
T jit_rebuild(const T& original, const std::vector<TreeDef>& defs, const std::vector<Array>& leaves, std::size_t& pos,
              std::size_t& k) {
  if constexpr (is_static_arg<T>) {
    return original;
  } else {
    const TreeDef& d = defs[k++];
    return unflatten<T>(d, take(leaves, pos, d.num_leaves()));
  }
}
}  // namespace detail

// jit(f)(args...): traced once per input signature (avals, tree structure, static arguments:
// arithmetic and std::string arguments are static), simplified, fused and compiled; compiled
// programs are shared through the structural cache. Copies share one cache of traces and
// captured constants, released when the last copy is destroyed.
template <class F>
auto jit(F f, JitOptions o = {}) {
  auto core = std::make_shared<JitCore>(std::move(o));
  return [f, core](const auto&... args) {
    using R = std::decay_t<std::invoke_result_t<F, decltype(args)...>>;
    std::vector<Array> leaves;
    std::vector<TreeDef> defs;
    std::string sig;
    (detail::jit_flatten(args, leaves, defs, sig), ...);
    // the output tree lives with the trace: a first call that fails after tracing (running out
    // of device memory, a deferred error) leaves a trace that later calls can still use
    std::any out_tree;
    FlatFn fn = [&](const std::vector<Array>& in) {
      std::size_t pos = 0, k = 0;
      // braced initialization: the arguments are rebuilt left to right
      std::tuple<std::decay_t<decltype(args)>...> typed{detail::jit_rebuild(args, defs, in, pos, k)...};
      TreeDef od;
      auto leaves_out = detail::out_leaves(std::apply(f, typed), od);
      out_tree = std::move(od);
      return leaves_out;
    };
    auto out = core->call(sig, leaves, fn, out_tree);
    return unflatten<R>(std::any_cast<const TreeDef&>(out_tree), out);
  };
}

}  // namespace jx
