#pragma once
// (Pairs are unpacked into references, not structured bindings: lambdas capture them, which
// clang 14 — the fuzz build — does not allow for bindings.)
// Control flow: lax.scan, lax.fori_loop, lax.associative_scan over pytrees.
#include <fmt/format.h>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/base/scan_path.h"
#include "core/np/np.h"
#include "core/trace/pytree.h"
#include "core/transform/autodiff.h"

namespace jx {

// Called with every scan's path as it runs (a subscription to the scan_path events of
// core/instrument, the one channel: ScanPathTracker reads the same); nullptr: none.
using ScanPathCallback = std::function<void(ScanPath path, const std::string& backend, const std::string& details)>;
void set_scan_path_callback(ScanPathCallback cb);

struct ScanOptions {
  std::optional<std::int64_t> length;  // required when there are no xs
  bool reverse = false;
  int unroll = 1;          // accepted for API parity; the planner decides per backend
  ScanPaths require_path;  // empty: any path; otherwise ScanPathError if not met
};

// lax.switch: branches[clamp(index, 0, n - 1)](ops...), index an int32[] array; every branch
// takes the operands' types and returns the same types. Only the chosen branch runs.
std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches, const std::vector<Array>& ops);

// Flat while loop: carry = body(carry...) while cond(carry...) (a bool[] array) holds.
std::vector<Array> while_loop_flat(const FlatFn& cond, const FlatFn& body, const std::vector<Array>& init);

// Flat scan: body(consts..., carry..., x...) -> (carry..., y...). Returns (carry..., ys...).
std::vector<Array> scan_flat(const FlatFn& body, std::size_t num_carry, const std::vector<Array>& init,
                             const std::vector<Array>& xs, const ScanOptions& o = {});

namespace lax {

// scan(f, init, xs): f(carry, x) -> (carry, y); returns (final carry, stacked ys). carry, x and y
// are pytrees (Array, std::vector, std::map, std::tuple, std::pair, registered structs).
template <class F, class C, class X>
requires(!std::is_integral_v<X>) auto scan(F f, const C& init, const X& xs, const ScanOptions& o = {}) {
  using Out = std::decay_t<std::invoke_result_t<F, const C&, const X&>>;
  using Y = std::decay_t<decltype(std::declval<Out>().second)>;
  auto cl_cd = flatten(init);
  auto& cl = std::get<0>(cl_cd);
  auto& cd = std::get<1>(cl_cd);
  auto xl_xd = flatten(xs);
  auto& xl = std::get<0>(xl_xd);
  auto& xd = std::get<1>(xl_xd);
  TreeDef yd;
  FlatFn body = [&](const std::vector<Array>& in) {
    std::vector<Array> c(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cl.size()));
    std::vector<Array> x(in.begin() + static_cast<std::ptrdiff_t>(cl.size()), in.end());
    Out r = f(unflatten<C>(cd, c), unflatten<X>(xd, x));
    auto nc_ncd = flatten(r.first);
    auto& nc = std::get<0>(nc_ncd);
    auto& ncd = std::get<1>(nc_ncd);
    if (ncd != cd)
      throw ShapeError(fmt::format("scan: the body returns a carry of structure {}, expected {}", ncd.str(), cd.str()));
    auto y_ydef = flatten(r.second);
    auto& y = std::get<0>(y_ydef);
    auto& ydef = std::get<1>(y_ydef);
    yd = ydef;
    nc.insert(nc.end(), y.begin(), y.end());
    return nc;
  };
  auto out = scan_flat(body, cl.size(), cl, xl, o);
  std::vector<Array> c(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(cl.size()));
  std::vector<Array> y(out.begin() + static_cast<std::ptrdiff_t>(cl.size()), out.end());
  return std::pair<C, Y>{unflatten<C>(cd, c), unflatten<Y>(yd, y)};
}

// Scan with no xs: f(carry) -> (carry, y) for `length` steps.
template <class F, class C>
auto scan(F f, const C& init, std::int64_t length, const ScanOptions& o = {}) {
  ScanOptions opts = o;
  opts.length = length;
  return scan([&](const C& c, const std::vector<Array>&) { return f(c); }, init, std::vector<Array>{}, opts);
}

// while_loop(cond, body, init): lax.while_loop over a pytree carry. Forward-mode and vmap
// differentiate through it; reverse mode is refused (the trip count is data), as in JAX.
template <class C, class B, class T>
T while_loop(C cond, B body, const T& init) {
  auto leaves_def = flatten(init);
  auto& leaves = std::get<0>(leaves_def);
  auto& def = std::get<1>(leaves_def);
  FlatFn c = [&](const std::vector<Array>& in) { return std::vector<Array>{cond(unflatten<T>(def, in))}; };
  FlatFn b = [&](const std::vector<Array>& in) {
    auto out_def = flatten(body(unflatten<T>(def, in)));
    if (std::get<1>(out_def) != def) throw ShapeError("while_loop: the body returns a carry of another structure");
    return std::get<0>(out_def);
  };
  return unflatten<T>(def, while_loop_flat(c, b, leaves));
}

// fori_loop(lower, upper, body, init): carry = body(i, carry) for i in [lower, upper), i int32.
template <class F, class C>
C fori_loop(std::int64_t lower, std::int64_t upper, F body, const C& init) {
  const std::int64_t n = std::max<std::int64_t>(0, upper - lower);
  auto step = [&](const std::pair<Array, C>& ic) {
    Array next = np::add(ic.first, np::ones({}, DType::int32));
    return std::pair<std::pair<Array, C>, std::vector<Array>>{{next, body(ic.first, ic.second)}, {}};
  };
  auto final_ys = scan(step, std::pair<Array, C>{np::full({}, static_cast<double>(lower), DType::int32), init}, n);
  auto& final = std::get<0>(final_ys);
  auto& ys = std::get<1>(final_ys);
  (void)ys;
  return final.second;
}

// Inclusive prefix combination along `axis` with an associative fn over pytrees of arrays
// (JAX's odd/even recursion: O(log n) levels of slices, fn applications and interleaving).
// fn(a, b) combines earlier elements a with later elements b, elementwise over the axis.
using AssocFn = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
std::vector<Array> associative_scan_flat(const AssocFn& fn, const std::vector<Array>& elems, bool reverse = false,
                                         std::int64_t axis = 0);

template <class F, class T>
T associative_scan(F fn, const T& elems, bool reverse = false, std::int64_t axis = 0) {
  auto leaves_def = flatten(elems);
  auto& leaves = std::get<0>(leaves_def);
  auto& def = std::get<1>(leaves_def);
  AssocFn flat = [&](const std::vector<Array>& a, const std::vector<Array>& b) {
    auto r_rd = flatten(fn(unflatten<T>(def, a), unflatten<T>(def, b)));
    auto& r = std::get<0>(r_rd);
    auto& rd = std::get<1>(r_rd);
    if (rd != def) throw ShapeError("associative_scan: fn returns a different tree structure than its operands");
    return r;
  };
  return unflatten<T>(def, associative_scan_flat(flat, leaves, reverse, axis));
}

}  // namespace lax
}  // namespace jx
