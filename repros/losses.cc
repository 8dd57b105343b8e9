// Repros of the autodiff failures: the 3-tuple associative-scan loss (buffer limit, tracer
// disposal), its Kalman version, the concatenate VJP, and the smaller reports (isnan on [4,1],
// the inverse's gradient, a 3-operand einsum under grad).
#include <fmt/format.h>

#include "repros/repro.h"

namespace jx::lab {
namespace {

using T3 = std::tuple<Array, Array, Array>;

// (a0,b0,c0)⊕(a1,b1,c1) = (a1·a0, a1·b0 + b1, a1·c0 + c1); with `dispose`, compose disposes
// its operand handles once it has its result, as the documented client code does.
T3 compose3(const T3& x, const T3& y, bool dispose) {
  auto [a0, b0, c0] = x;
  auto [a1, b1, c1] = y;
  T3 r{a1 * a0, a1 * b0 + b1, a1 * c0 + c1};
  if (dispose)
    for (Array* h : {&a0, &b0, &c0, &a1, &b1, &c1}) h->dispose();
  return r;
}

// N elements, a = b = e^θ·ones(N), c = ones(N); loss = sum(a + b + c) of the scan. With
// compose = disposes_handles the loss also disposes its scale e^θ [1] before returning, as the
// documented client code does.
void assoc3(Run& r) {
  const std::int64_t n = r.integer("n", 20);
  const bool dispose = r.str("compose", "plain") == "disposes_handles";
  const DType d = r.dtype();
  auto loss = [n, d, dispose](const Array& theta) {
    Array scale = np::exp(theta);
    Array e = scale * np::ones({n}, d);
    auto [a, b, c] = lax::associative_scan([dispose](const T3& x, const T3& y) { return compose3(x, y, dispose); },
                                           T3{e, e, np::ones({n}, d)});
    Array lik = np::sum(a + b + c);
    if (dispose) scale.dispose();  // the client's `using scale = exp(θ)` ends with the loss
    return lik;
  };
  loss_under_transform(r, loss, np::full({1}, r.num("theta", 0.5), d));
}

// Kalman elements (A [m,m], b [m,1], S [m,m]) composed as (A_b·A_a, A_b·b_a + b_b, A_b·S_a·A_bᵀ + S_b),
// m = 2; A_t = e^θ·R(0.1 t)·0.9, b_t = (sin t, cos t), S_t = 0.1·I; loss = sum of every result.
void assoc_kalman(Run& r) {
  const std::int64_t n = r.integer("n", 20);
  const DType d = r.dtype();
  auto loss = [n, d](const Array& theta) {
    Array t = np::arange(0, static_cast<double>(n), 1, d) * 0.1;
    Array s = np::exp(theta) * 0.9;
    Array A = np::stack(
        {np::stack({np::cos(t) * s, np::sin(t) * s * -1.0}, -1), np::stack({np::sin(t) * s, np::cos(t) * s}, -1)}, -2);
    Array b = np::reshape(np::stack({np::sin(t * 10.0), np::cos(t * 10.0)}, -1), {n, 2, 1});
    Array S = np::broadcast_to(np::eye(2, {}, 0, d) * 0.1, {n, 2, 2});
    auto [A1, b1, S1] = lax::associative_scan(
        [](const T3& x, const T3& y) {
          const auto& [Aa, ba, Sa] = x;
          const auto& [Ab, bb, Sb] = y;
          return T3{np::matmul(Ab, Aa), np::matmul(Ab, ba) + bb,
                    np::matmul(np::matmul(Ab, Sa), np::swapaxes(Ab, -1, -2)) + Sb};
        },
        T3{A, b, S});
    return np::sum(A1) + np::sum(b1) + np::sum(S1);
  };
  loss_under_transform(r, loss, np::full({1}, r.num("theta", -0.1), d));
}

// grad through concatenate([constant, θ·x, constant]) · w: the constants get no cotangent.
void concat_grad(Run& r) {
  const DType d = r.dtype();
  auto loss = [d](const Array& theta) {
    Array x = np::arange(1, 4, 1, d);
    Array cat = np::concatenate({np::ones({2}, d), theta * x, np::full({2}, 3.0, d)}, 0);
    return np::sum(cat * np::arange(0, 7, 1, d));
  };
  loss_under_transform(r, loss, np::full({1}, r.num("theta", 2.0), d));
}

// isnan on a [4,1] array: the mask [0,1,0,1].
void isnan41(Run& r) {
  Array x = np::reshape(np::array({1.0, NAN, 3.0, NAN}, r.dtype()), {4, 1});
  outputs_under_transform(
      r, [](const std::vector<Array>& in) { return std::vector<Array>{np::astype(np::isnan(in[0]), DType::float32)}; },
      {x});
}

// sum(inv(θ·I))/2 = 1/θ: d/dθ at θ = 5 is -0.04 (the report had -0.24, off by θ + 1).
void inv_grad(Run& r) {
  const DType d = r.dtype();
  auto loss = [d](const Array& theta) { return np::sum(np::linalg::inv(np::eye(2, {}, 0, d) * theta)) * 0.5; };
  loss_under_transform(r, loss, np::full({}, r.num("theta", 5.0), d));
}

// grad of sum(einsum("ij,jk,kl->il", θ·A, B, C)).
void einsum3(Run& r) {
  const DType d = r.dtype();
  auto loss = [d](const Array& theta) {
    Array A = np::reshape(np::arange(0, 6, 1, d), {2, 3}) * theta;
    Array B = np::reshape(np::arange(0, 12, 1, d), {3, 4}) * 0.1;
    Array C = np::reshape(np::arange(0, 8, 1, d), {4, 2}) * 0.01;
    return np::sum(np::einsum("ij,jk,kl->il", {A, B, C}));
  };
  loss_under_transform(r, loss, np::full({}, r.num("theta", 1.5), d));
}

}  // namespace

void register_losses(std::map<std::string, Repro>& m) {
  m["assoc3_loss"] = {"assoc3_loss",
                      "sum(a+b+c) of associative_scan over the 3-tuple compose (params n, theta, dtype, compose)",
                      assoc3,
                      {"n", "theta", "dtype", "compose"},
                      {},
                      {}};
  m["assoc_kalman_loss"] = {"assoc_kalman_loss",
                            "sum of the Kalman-element associative scan, m=2 (params n, theta, dtype)",
                            assoc_kalman,
                            {"n", "theta", "dtype"},
                            {},
                            {}};
  m["concat_grad"] = {"concat_grad",
                      "loss through concatenate of constants and linear values (params theta, dtype)",
                      concat_grad,
                      {"theta", "dtype"},
                      {},
                      {}};
  m["isnan41"] = {"isnan41", "isnan on a [4,1] array (params dtype)", isnan41, {"dtype"}, {"eager", "jit"}, {}};
  m["inv_grad"] = {
      "inv_grad", "sum(inv(θ·I))/2 and its gradient (params theta, dtype)", inv_grad, {"theta", "dtype"}, {}, {}};
  m["einsum3_grad"] = {"einsum3_grad",
                       "sum of a 3-operand einsum and its gradient (params theta, dtype)",
                       einsum3,
                       {"theta", "dtype"},
                       {},
                       {}};
}

}  // namespace jx::lab
