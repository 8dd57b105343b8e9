#include "core/backends/backend.h"
#include "core/trace/builder.h"
#include "core/trace/trace.h"
#include "scanpath/scan_path_tracker.h"
#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
Array f64(std::initializer_list<np::Nested> v) { return np::array(v, DType::float64); }
using AP = std::pair<Array, Array>;

// carry' = carry * x + sin(carry) * theta; y = carry'^2
AP step(const Array& c, const Array& x, const Array& theta) {
  Array n = c * x + np::sin(c) * theta;
  return {n, n * n};
}
Array scan_loss(const Array& init, const Array& xs, const Array& theta) {
  auto [c, ys] = lax::scan([&](const Array& cc, const Array& x) { return step(cc, x, theta); }, init, xs);
  return np::sum(ys) + np::sum(c);
}
}  // namespace

TEST(Scan, CumsumAndPathOnCpu) {
  DefaultDeviceScope cpu("cpu");
  ScanPathTracker t;
  Array xs = f64({1.0, 2.0, 3.0, 4.0});
  auto [c, ys] = lax::scan(
      [](const Array& s, const Array& x) {
        return AP{s + x, s + x};
      },
      np::zeros({}, DType::float64), xs);
  EXPECT_DOUBLE_EQ(c.item<double>(), 10.0);
  EXPECT_TRUE(all_close(ys, {1, 3, 6, 10}));
  t.expect_path(ScanPath::fallback);
  ASSERT_EQ(t.choices().size(), 1u);
  EXPECT_EQ(t.choices()[0].backend, "cpu");
  EXPECT_NE(t.choices()[0].details.find("4 steps as a host loop"), std::string::npos);
  EXPECT_THROW(t.expect_path(ScanPath::fused), ScanPathError);
}

TEST(Scan, FactorialWithForiLoop) {
  Array f = lax::fori_loop(
      1, 6, [](const Array& i, const Array& acc) { return acc * np::astype(i, DType::float64); },
      np::ones({}, DType::float64));
  EXPECT_DOUBLE_EQ(f.item<double>(), 120.0);
  Array none = lax::fori_loop(
      3, 3, [](const Array&, const Array& acc) { return acc * 2.0; }, np::ones({}, DType::float64));
  EXPECT_DOUBLE_EQ(none.item<double>(), 1.0);
}

TEST(Scan, PytreeCarriesDictXsReverseAndViews) {
  std::map<std::string, Array> xs{{"a", f64({1.0, 2.0, 3.0})}, {"b", f64({10.0, 20.0, 30.0})}};
  auto body = [](const std::pair<Array, Array>& c, const std::map<std::string, Array>& x) {
    std::pair<Array, Array> n{c.first + x.at("a"), c.second * 2.0 + x.at("b")};
    return std::pair{n, std::vector<Array>{n.first, n.second}};
  };
  auto [c, ys] = lax::scan(body, std::pair{np::zeros({}, DType::float64), np::zeros({}, DType::float64)}, xs);
  EXPECT_DOUBLE_EQ(c.first.item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(c.second.item<double>(), ((10 * 2 + 20) * 2 + 30));
  EXPECT_TRUE(all_close(ys[1], {10, 40, 110}));
  auto [cr, ysr] = lax::scan(
      [](const Array& s, const Array& x) {
        return AP{s * 10.0 + x, s};
      },
      np::zeros({}, DType::float64), f64({1.0, 2.0, 3.0}), {.reverse = true});
  EXPECT_DOUBLE_EQ(cr.item<double>(), 321.0);
  EXPECT_TRUE(all_close(ysr, {32, 3, 0}));  // ys[t] is the carry entering step t, steps run t = 2, 1, 0
  Array m = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  auto [cv, yv] = lax::scan(
      [](const Array& s, const Array& col) {
        return AP{s + col, np::sum(col)};
      },
      np::zeros({2}, DType::float64),
      np::transpose(m));  // scan over the columns: a transposed view
  EXPECT_TRUE(all_close(cv, {6, 15}));
  EXPECT_TRUE(all_close(yv, {5, 7, 9}));
  auto [cs, ysl] = lax::scan(
      [](const Array& s, const Array& x) {
        return AP{s + x, x};
      },
      np::zeros({}, DType::float64), np::index(f64({1.0, 2.0, 3.0, 4.0, 5.0}), {np::Slice{{}, {}, 2}}));
  EXPECT_DOUBLE_EQ(cs.item<double>(), 9.0);
}

TEST(Scan, CapturedConstantsAndEdgeLengths) {
  Array w = f64({2.0, 3.0});
  auto [c, ys] = lax::scan(
      [&](const Array& s, const Array& x) {
        return AP{s * w + x, s};
      },
      np::ones({2}, DType::float64), f64({{1.0, 1.0}, {0.0, 0.0}}));
  EXPECT_TRUE(all_close(c, {6, 12}));
  auto [c0, y0] = lax::scan(
      [](const Array& s, const Array& x) {
        return AP{s + x, s * 2.0};
      },
      np::ones({3}, DType::float64), np::zeros({0, 3}, DType::float64));
  EXPECT_TRUE(all_close(c0, {1, 1, 1}));
  EXPECT_EQ(y0.shape(), (Shape{0, 3}));
  auto [c1, y1] = lax::scan(
      [](const Array& s, const Array& x) {
        return AP{s + x, s * 2.0};
      },
      np::ones({3}, DType::float64), np::ones({1, 3}, DType::float64));
  EXPECT_TRUE(all_close(c1, {2, 2, 2}));
  EXPECT_EQ(y1.shape(), (Shape{1, 3}));
  auto [cn, yn] = lax::scan([](const Array& s) { return AP{s * 2.0, s}; }, np::ones({}, DType::float64), 3);
  EXPECT_DOUBLE_EQ(cn.item<double>(), 8.0);
  EXPECT_TRUE(all_close(yn, {1, 2, 4}));
}

TEST(Scan, Errors) {
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] {
        lax::scan([](const Array& s, const Array& x) { return AP{np::stack({s, s}), x}; }, np::ones({}), np::ones({3}));
      },
      {"scan: the body returns carry 0 as float32[2] but it entered as float32[]"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] {
        lax::scan(
            [](const Array& s, const std::vector<Array>& x) {
              return AP{s, x[0] + x[1]};
            },
            np::ones({}), std::vector<Array>{np::ones({3}), np::ones({4})});
      },
      {"does not match length 3"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { scan_flat([](const std::vector<Array>& in) { return in; }, 1, {np::ones({})}, {}); },
      {"length must be given"}));
}

TEST(Scan, RequirePathAndCallback) {
  DefaultDeviceScope cpu("cpu");
  std::vector<std::string> seen;
  set_scan_path_callback([&](ScanPath p, const std::string& backend, const std::string&) {
    seen.push_back(std::string(scan_path_name(p)) + "@" + backend);
  });
  auto body = [](const Array& s, const Array& x) { return AP{s + x, s}; };
  EXPECT_TRUE(jxt::throws_msg<ScanPathError>(
      [&] { lax::scan(body, np::zeros({}), np::ones({4}), {.require_path = {ScanPath::fused}}); },
      "Scan require_path not satisfied: got \"fallback\" but required one of [fused]"));
  auto [c, ys] = lax::scan(body, np::zeros({}), np::ones({4}), {.require_path = {ScanPath::fused, ScanPath::fallback}});
  EXPECT_DOUBLE_EQ(c.item<double>(), 4.0);
  set_scan_path_callback(nullptr);
  EXPECT_EQ(seen, (std::vector<std::string>{"fallback@cpu", "fallback@cpu"}));
}

TEST(ScanGrad, MatchesFiniteDifferences) {
  Array init = f64({0.3, -0.2}), xs = f64({{0.9, 1.1}, {0.5, -0.7}, {1.2, 0.4}, {-0.3, 0.8}}), theta = f64({0.7, 0.2});
  auto g = grad(scan_loss, argnums<0, 1, 2>)(init, xs, theta);
  const double h = 1e-6;
  auto fd = [&](int which, std::size_t k) {
    std::vector<Array> args{init, xs, theta};
    auto v = vals(args[which]);
    auto at = [&](double d) {
      auto p = v;
      p[k] += d;
      auto a = args;
      a[which] = np::array(p, args[which].shape(), DType::float64);
      return scan_loss(a[0], a[1], a[2]).item<double>();
    };
    return (at(h) - at(-h)) / (2 * h);
  };
  auto check = [&](int which, const Array& got) {
    auto gv = vals(got);
    for (std::size_t k = 0; k < gv.size(); ++k)
      EXPECT_NEAR(gv[k], fd(which, k), 1e-6 * (1 + std::abs(gv[k]))) << which << "," << k;
  };
  check(0, std::get<0>(g));
  check(1, std::get<1>(g));
  check(2, std::get<2>(g));
  // jvp agrees with the gradient (dot-product test through the scan)
  Array u = f64({0.5, -1.0});
  auto [v, t] = jvp([&](const Array& i) { return scan_loss(i, xs, theta); }, std::tuple{init}, std::tuple{u});
  EXPECT_NEAR(t.item<double>(), np::sum(std::get<0>(g) * u).item<double>(), 1e-12);
}

TEST(ScanGrad, ReverseScanAndSecondOrder) {
  auto f = [](const Array& a) {
    auto [c, ys] = lax::scan(
        [&](const Array& s, const Array& x) {
          return AP{np::tanh(s * a + x), s};
        },
        np::zeros({}, DType::float64), f64({0.1, 0.2, 0.3}), {.reverse = true});
    return c;
  };
  const double a0 = 0.8, h = 1e-5;
  const double d1 = grad(f)(np::scalar(a0, DType::float64)).item<double>();
  EXPECT_NEAR(
      d1,
      (f(np::scalar(a0 + h, DType::float64)).item<double>() - f(np::scalar(a0 - h, DType::float64)).item<double>()) /
          (2 * h),
      1e-8);
  auto df = grad(f);
  const double d2 = grad([&](const Array& a) { return df(a); })(np::scalar(a0, DType::float64)).item<double>();
  EXPECT_NEAR(
      d2,
      (df(np::scalar(a0 + h, DType::float64)).item<double>() - df(np::scalar(a0 - h, DType::float64)).item<double>()) /
          (2 * h),
      1e-7);
}

TEST(ScanGrad, CheckpointingKeepsOnlyCarries) {
  // A body with many intermediates per step: the pullback may keep the carries and the xs,
  // not every intermediate of every step.
  const int n = 64, k = 8;
  Array xs = np::ones({n, k}, DType::float64) * 0.01, init = np::ones({k}, DType::float64) * 0.5;
  auto body = [](const Array& c, const Array& x) {
    Array t = c;
    for (int i = 0; i < 10; ++i) t = np::sin(t) * 0.9 + x;
    return AP{t, np::sum(t)};
  };
  auto [out, lin] = vjp_flat(
      [&](const std::vector<Array>& in) {
        auto [c, ys] = lax::scan(body, in[0], xs);
        return std::vector<Array>{np::sum(ys) + np::sum(c)};
      },
      {init});
  std::size_t bytes = 0;
  for (const Array& c : lin.jaxpr().consts) bytes += c.aval().bytes();
  const std::size_t carries = static_cast<std::size_t>(n * k) * 8, xs_bytes = carries;
  EXPECT_LE(bytes, carries + xs_bytes + 4096) << "residual bytes " << bytes;
  auto g = lin.transpose({np::ones({}, DType::float64)});
  EXPECT_EQ(g[0].shape(), (Shape{k}));
}

TEST(ScanTransforms, VmapAndJitCompose) {
  auto run = [](const Array& init, const Array& xs) {
    auto [c, ys] = lax::scan([](const Array& s, const Array& x) { return AP{s * 0.5 + x, s * x}; }, init, xs);
    return std::pair{c, ys};
  };
  Array inits = f64({1.0, 2.0, 3.0});
  Array xs = f64({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});  // batch of 3 sequences of length 2
  std::vector<double> wc, wy;
  for (int b = 0; b < 3; ++b) {
    auto [c, ys] = run(np::index(inits, {std::int64_t{b}}), np::index(xs, {std::int64_t{b}}));
    wc.push_back(c.item<double>());
    for (double y : vals(ys)) wy.push_back(y);
  }
  auto [vc, vy] = vmap(run)(inits, xs);
  EXPECT_TRUE(all_close(vc, wc));
  EXPECT_TRUE(all_close(vy, wy));
  auto [jc, jy] = jit(vmap(run))(inits, xs);
  EXPECT_TRUE(all_close(jc, wc));
  EXPECT_TRUE(all_close(jy, wy));
  auto [kc, ky] = vmap(jit(run))(inits, xs);
  EXPECT_TRUE(all_close(kc, wc));
  EXPECT_TRUE(all_close(ky, wy));
  // unbatched xs shared by every batch member
  auto [sc, sy] = vmap(run, {0, std::nullopt})(inits, f64({1.0, 1.0}));
  EXPECT_TRUE(all_close(sc, {1.75, 2.0, 2.25}));
  ScanPathTracker t;
  Array g = jit(grad([](const Array& i, const Array& x) {
    return scan_loss(i, x, f64({0.7, 0.2}));
  }))(f64({0.3, -0.2}), f64({{0.9, 1.1}, {0.5, -0.7}}));
  Array ge = grad([](const Array& i, const Array& x) {
    return scan_loss(i, x, f64({0.7, 0.2}));
  })(f64({0.3, -0.2}), f64({{0.9, 1.1}, {0.5, -0.7}}));
  EXPECT_TRUE(all_close(g, vals(ge), 1e-13, 1e-13));
  // the path the default backend's planner takes: native and vulkan compile loops, cpu runs host loops
  t.expect_path(default_backend().info().backend == "cpu" ? ScanPath::fallback : ScanPath::fused);
}

TEST(Scan, RtsBackwardStepReverse) {
  // r' = Aᵀ r + b,  N' = Aᵀ N A + S  (m = 2), run backwards over N steps
  Array A = f64({{1.0, 0.5}, {0.0, 1.0}}), S = f64({{0.1, 0.0}, {0.0, 0.2}});
  const int n = 6;
  Array bs = np::reshape(np::arange(0, 2 * n, 1, DType::float64) * 0.1, {n, 2});
  using RN = std::pair<Array, Array>;
  auto [fin, hist] = lax::scan(
      [&](const RN& c, const Array& b) {
        RN next{np::matmul(np::transpose(A), c.first) + b, np::matmul(np::matmul(np::transpose(A), c.second), A) + S};
        return std::pair{next, next.first};
      },
      RN{np::zeros({2}, DType::float64), np::zeros({2, 2}, DType::float64)}, bs, {.reverse = true});
  Array r = np::zeros({2}, DType::float64), N = np::zeros({2, 2}, DType::float64);
  for (int t = n - 1; t >= 0; --t) {
    r = np::matmul(np::transpose(A), r) + np::index(bs, {std::int64_t{t}});
    N = np::matmul(np::matmul(np::transpose(A), N), A) + S;
  }
  EXPECT_TRUE(all_close(fin.first, vals(r), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(fin.second, vals(N), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(np::index(hist, {std::int64_t{0}}), vals(r), 1e-14, 1e-14));
}

namespace {
using Triple = std::tuple<Array, Array, Array>;
Triple compose(const Triple& x, const Triple& y) {  // (a1·a0, a1·b0 + b1, a1·c0 + c1)
  const auto& [a0, b0, c0] = x;
  const auto& [a1, b1, c1] = y;
  return {a1 * a0, a1 * b0 + b1, a1 * c0 + c1};
}
Array triple_loss(const Array& theta) {
  Array e = np::exp(theta) * np::ones({20}, theta.dtype());
  auto [a, b, c] = lax::associative_scan(compose, Triple{e, e, np::ones({20}, theta.dtype())});
  return np::sum(a + b + c);
}
}  // namespace

TEST(AssociativeScan, PrefixSumsAxesAndReverse) {
  auto add = [](const Array& a, const Array& b) { return a + b; };
  for (int n : {1, 2, 3, 7, 8, 16, 17}) {
    Array x = np::arange(1, n + 1, 1, DType::float64);
    std::vector<double> want;
    double s = 0;
    for (int i = 1; i <= n; ++i) want.push_back(s += i);
    EXPECT_TRUE(all_close(lax::associative_scan(add, x), want)) << n;
  }
  Array m = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_TRUE(all_close(lax::associative_scan(add, m, false, 1), {1, 3, 6, 4, 9, 15}));
  EXPECT_TRUE(all_close(lax::associative_scan(add, m, true, 1), {6, 5, 3, 15, 11, 6}));
  // non-commutative: 2x2 matrix products keep their order
  auto mm = [](const Array& a, const Array& b) { return np::matmul(b, a); };
  Array ms = np::stack({f64({{1.0, 1.0}, {0.0, 1.0}}), f64({{2.0, 0.0}, {0.0, 1.0}}), f64({{1.0, 0.0}, {3.0, 1.0}})});
  Array p = lax::associative_scan(mm, ms);
  Array want = np::matmul(np::index(ms, {std::int64_t{2}}),
                          np::matmul(np::index(ms, {std::int64_t{1}}), np::index(ms, {std::int64_t{0}})));
  EXPECT_TRUE(all_close(np::index(p, {std::int64_t{2}}), vals(want)));
}

TEST(AssociativeScan, TripleComposeLossAndGradient) {
  Array th = np::array({0.5}, DType::float64);
  auto [v, g] = value_and_grad(triple_loss)(th);
  EXPECT_NEAR(v.item<double>(), 284451.7727106761, 1e-7);
  EXPECT_NEAR(g.item<double>(), 4813870.5205, 1e-3);
  auto [jv, jg] = jit(value_and_grad(triple_loss))(th);
  EXPECT_NEAR(jv.item<double>(), 284451.7727106761, 1e-7);
  EXPECT_NEAR(jg.item<double>(), 4813870.5205, 1e-3);
  trace::DispatchTracker t;
  auto [bv, bg] = jit(value_and_grad(triple_loss), {.name = "webgpu_budget", .max_buffers = 8})(th);
  EXPECT_LE(t.max_buffers(), 8);
  EXPECT_NEAR(bg.item<double>(), 4813870.5205, 1e-3);
  auto [v32, g32] = value_and_grad(triple_loss)(np::array({0.5}));
  EXPECT_NEAR(v32.item<double>(), 284451.6875, 1.0);
  EXPECT_NEAR(g32.item<double>(), 4813868.5, 16.0);
}

namespace {
// affine elements (a, b) composed as (a1·a0, a1·b0 + b1): prefix of x_{t} = a_t x_{t-1} + b_t
Array affine_loss(const Array& th) {
  Array t = np::arange(0, 9, 1, DType::float64) * 0.1;
  Array a = np::exp(th * t) * 0.9, b = np::sin(th + t);
  auto r = jxt::affine_scan(a, b);
  return np::sum(r[1] * r[1]);
}
// the same inside a scan body: the body's jaxpr holds the associative_scan primitive, so grad and
// vmap of the scan reach the primitive's own jvp and vmap rules
Array scanned_loss(const Array& th) {
  auto [c, ys] = lax::scan(
      [](const Array& s, const Array& x) {
        return std::pair{s * 0.5 + np::tanh(affine_loss(s + x) * 0.01), s};
      },
      th, np::arange(0, 3, 1, DType::float64) * 0.2);
  return c;
}
double central(const std::function<Array(const Array&)>& f, double x) {
  const double h = 1e-6;
  return (f(np::full({}, x + h, DType::float64)).item<double>() -
          f(np::full({}, x - h, DType::float64)).item<double>()) /
         (2 * h);
}
}  // namespace

TEST(AssociativeScan, GradientsMatchFiniteDifferencesAndThePrimitiveRules) {
  for (double x : {0.3, -0.7}) {
    Array th = np::full({}, x, DType::float64);
    EXPECT_NEAR(grad(affine_loss)(th).item<double>(), central(affine_loss, x),
                1e-6 * (1 + std::abs(central(affine_loss, x))));
    EXPECT_NEAR(jit(grad(affine_loss))(th).item<double>(), central(affine_loss, x),
                1e-6 * (1 + std::abs(central(affine_loss, x))));
    const double fd = central(scanned_loss, x);
    EXPECT_NEAR(grad(scanned_loss)(th).item<double>(), fd, 1e-6 * (1 + std::abs(fd)));
    EXPECT_NEAR(jit(grad(scanned_loss))(th).item<double>(), fd, 1e-6 * (1 + std::abs(fd)));
  }
  Array ths = f64({0.3, -0.7, 0.1});
  Array v = vmap(scanned_loss)(ths), jv = jit(vmap(scanned_loss))(ths);
  for (std::int64_t i = 0; i < 3; ++i) {
    const double want = scanned_loss(np::index(ths, {i})).item<double>();
    EXPECT_NEAR(vals(v)[i], want, 1e-12);
    EXPECT_NEAR(vals(jv)[i], want, 1e-12);
  }
}

namespace {
std::size_t count_eqns(const Jaxpr& j, Prim p) {
  std::size_t n = 0;
  for (const Eqn& e : j.eqns) n += e.prim == p;
  return n;
}
// slices with a stride other than 1: the odd/even recursion's
std::size_t strided_slices(const Jaxpr& j) {
  std::size_t n = 0;
  for (const Eqn& e : j.eqns)
    if (e.prim == Prim::slice)
      for (std::int64_t s : e.params.strides) n += s != 1;
  return n;
}
}  // namespace

namespace {
// th = [p, q]: a const with a tangent (q), a reverse scan, an integer leaf
Array two_leaf_loss(const Array& th) {
  Array t = np::arange(0, 37, 1, DType::float64) * 0.05;
  Array p = np::index(th, {std::int64_t{0}}), q = np::index(th, {std::int64_t{1}});
  Array a = np::exp(p * t) * 0.9, b = np::sin(q + t);
  Array k = np::arange(0, 37, 1, DType::int32), w = np::cos(t) * 0.1;
  auto r = lax::associative_scan_flat(  // w ∘ z = w + z + q w z is associative (and commutative)
      [&](const std::vector<Array>& u, const std::vector<Array>& v) {
        return std::vector<Array>{v[0] * u[0], v[0] * u[1] + v[1], u[2] + v[2], u[3] + v[3] + q * u[3] * v[3]};
      },
      {a, b, k, w}, /*reverse=*/true);
  return np::sum(r[1] * r[1]) + np::sum(lax::convert_element_type(r[2], DType::float64)) * 1e-3 + np::sum(r[3]);
}
}  // namespace

// Forward mode keeps the scan whole: one associative_scan of (element, tangent) pairs, the
// tangents of every parameter batched in it (a jvp vmapped over the basis); its
// gradient equals reverse mode's (a linear recurrence) and central differences, for fn that close
// over the differentiated value (a const with a tangent), reverse scans and several parameters.
TEST(AssociativeScan, ForwardModeIsOneScanOfTangentPairs) {
  auto two = two_leaf_loss;
  Array th = f64({0.3, -0.7});
  auto j = make_jaxpr(grad(two, argnums<0>, forward_mode))(th);
  EXPECT_EQ(count_eqns(j.jaxpr, Prim::associative_scan), 1u);  // for both parameters: the tangent leaves batched
  for (const Eqn& e : j.jaxpr.eqns)
    if (e.prim == Prim::associative_scan) {
      std::vector<Shape> outs;
      for (int o : e.out) outs.push_back(j.jaxpr.avals[o].shape);
      EXPECT_EQ(outs, (std::vector<Shape>{{37}, {37}, {37}, {37}, {37, 2}, {37, 2}, {37, 2}}))
          << j.jaxpr.str();  // a b k w | ȧ ḃ ẇ
    }
  EXPECT_EQ(strided_slices(j.jaxpr), 0u) << j.jaxpr.str();
  EXPECT_EQ(strided_slices(make_jaxpr(grad(two))(th).jaxpr), 0u);  // reverse mode too: no odd/even recursion
  auto [v, g] = value_and_grad(two)(th);
  auto [fv, fg] = value_and_grad(two, argnums<0>, forward_mode)(th);
  auto [jv, jg] = jit(value_and_grad(two, argnums<0>, forward_mode))(th);
  EXPECT_NEAR(fv.item<double>(), v.item<double>(), 1e-12 * std::abs(v.item<double>()));
  EXPECT_NEAR(jv.item<double>(), v.item<double>(), 1e-12 * std::abs(v.item<double>()));
  EXPECT_TRUE(all_close(fg, vals(g), 1e-10, 1e-10));
  EXPECT_TRUE(all_close(jg, vals(g), 1e-10, 1e-10));
  for (std::int64_t i = 0; i < 2; ++i) {
    auto at = [&](double d) {
      std::vector<double> x = vals(th);
      x[static_cast<std::size_t>(i)] += d;
      return two(np::array(x, Shape{2}, DType::float64)).item<double>();
    };
    const double fd = (at(1e-6) - at(-1e-6)) / 2e-6;
    EXPECT_NEAR(vals(fg)[static_cast<std::size_t>(i)], fd, 1e-6 * (1 + std::abs(fd)));
  }
  // nested: the primitive inside a scan body (its own jvp rule under forward mode)
  for (double x : {0.3, -0.7}) {
    const double fd = central(scanned_loss, x);
    EXPECT_NEAR(grad(scanned_loss, argnums<0>, forward_mode)(np::full({}, x, DType::float64)).item<double>(), fd,
                1e-6 * (1 + std::abs(fd)));
    EXPECT_NEAR(jit(grad(scanned_loss, argnums<0>, forward_mode))(np::full({}, x, DType::float64)).item<double>(), fd,
                1e-6 * (1 + std::abs(fd)));
  }
  // jvp itself (not grad): one pair scan, reverse mode's linear map gives the same tangent
  auto [y, ty] = jvp([&](const Array& a) { return affine_loss(a); }, std::tuple{np::full({}, 0.3, DType::float64)},
                     std::tuple{np::full({}, 1.0, DType::float64)});
  EXPECT_NEAR(ty.item<double>(), grad(affine_loss)(np::full({}, 0.3, DType::float64)).item<double>(), 1e-10);
}

// vmap keeps the primitive: batched leaves carry the batch axis right after the scan axis, the
// combine is vmapped, and a leaf whose operand is unbatched becomes batched when the combine makes
// it depend on a batched one (s below); an integer leaf that does not stays unbatched. Checked
// against a loop over the batch, eagerly and under jit, on axis 1 and reversed.
namespace {
// 2x2 matrices M (leaf [2, 2, n]) and column vectors v ([2, 1, n]) along the last axis, composed as the
// affine maps x -> M x + v: an element of d = 6 floats on an axis other than the first
Array matrix_leaf_loss(const Array& th) {
  const std::int64_t n = 29;
  Array t = np::arange(0, n, 1, DType::float64) * 0.07;
  Array p = np::index(th, {std::int64_t{0}}), q = np::index(th, {std::int64_t{1}});
  Array m = np::stack({np::stack({np::cos(p * t) * 0.8, np::sin(q * t) * 0.3}),
                       np::stack({np::sin(p + t) * -0.2, np::cos(q - t) * 0.7})});
  Array v = np::expand_dims(np::stack({np::sin(q * t + p), np::cos(t) * q}), 1);
  auto mat = [](const Array& x) { return np::moveaxis(x, -1, 0); };  // [2, c, L] -> [L, 2, c]
  auto r = lax::associative_scan_flat(
      [&](const std::vector<Array>& a, const std::vector<Array>& b) {
        Array mb = mat(b[0]);
        return std::vector<Array>{np::moveaxis(np::matmul(mb, mat(a[0])), 0, -1),
                                  np::moveaxis(np::matmul(mb, mat(a[1])), 0, -1) + b[1]};
      },
      {m, v}, /*reverse=*/false, /*axis=*/-1);
  return np::sum(r[1] * r[1]) + np::sum(r[0]) * 0.1;
}
}  // namespace

// fn traced as jit traces it for target t (the formulation its transformations pick there), and
// that jaxpr evaluated on the default backend.
ClosedJaxpr staged_jaxpr(const std::function<Array(const Array&)>& fn, const Target& t, const Array& x) {
  return make_jaxpr_flat([&](const std::vector<Array>& a) { return std::vector<Array>{fn(a[0])}; }, {x.aval()}, &t);
}
Array staged(const std::function<Array(const Array&)>& fn, const Target& t, const Array& x) {
  const ClosedJaxpr cj = staged_jaxpr(fn, t, x);
  return eval_jaxpr(cj.jaxpr, cj.consts, {x})[0];
}

// Reverse mode does not differentiate the odd/even recursion. On a sequential backend it
// linearizes the fold (a lax.scan; its transpose a reversed scan); staged for a GPU (vulkan) the
// tangents are forward mode's scan of (element, tangent) pairs, whose transpose is one reverse
// associative_scan of (prefix before the segment, segment, cotangent) triples; on a sequential
// backend under a buffer budget, the recursion (its kernels fit the budget; a compiled loop binds
// every operand). All give forward mode's gradient, also through vmap of the pullback (jacrev)
// and reverse over reverse.
TEST(AssociativeScan, ReverseModeTransposesAsOneReverseScan) {
  for (auto f : {two_leaf_loss, matrix_leaf_loss}) {
    Array th = f64({0.3, -0.7});
    auto [fv, fg] = value_and_grad(f, argnums<0>, forward_mode)(th);
    auto row = [&](const Array& x) {  // a vector output, for jacrev (vmap of the pullback)
      return np::stack({f(x), f(x * 2.0)});
    };
    auto fj = jacfwd(row)(th);
    auto fd_grad = [&](double x0) { return grad(f)(f64({x0, -0.7})); };
    for (const auto& [staged_for, budget] : {std::pair{"cpu", 0}, std::pair{"vulkan", 8}, std::pair{"cpu", 8}}) {
      const Target t = Target::for_jit(backend(staged_for), budget);
      const std::string on = fmt::format("{}/{}", staged_for, budget);
      const Jaxpr j = staged_jaxpr([&](const Array& x) { return grad(f)(x); }, t, th).jaxpr;
      if (budget == 8 && std::string(staged_for) == "cpu") {  // the recursion
        EXPECT_GT(strided_slices(j), 0u) << j.str();
      } else if (budget == 0) {  // the fold: a primal scan and its transposed tangent scan
        EXPECT_EQ(strided_slices(j), 0u) << j.str();
        EXPECT_EQ(count_eqns(j, Prim::scan), 2u) << j.str();
        EXPECT_EQ(count_eqns(j, Prim::associative_scan), 0u) << j.str();
      } else {  // the primal scan (twice: the transpose binds it again) and the reverse triple scan
        EXPECT_EQ(strided_slices(j), 0u) << j.str();
        EXPECT_EQ(count_eqns(j, Prim::scan), 0u) << j.str();
        EXPECT_EQ(count_eqns(j, Prim::associative_scan), 3u) << j.str();
        std::size_t triples = 0;
        for (const Eqn& e : j.eqns)
          // 3 groups of leaves, each one array when all leaves share a dtype (matrix_leaf_loss)
          if (e.prim == Prim::associative_scan && e.out.size() == (f == two_leaf_loss ? 4u + 4u + 3u : 3u)) ++triples;
        EXPECT_EQ(triples, 1u) << j.str();
      }
      const Array v = staged([&](const Array& x) { return f(x); }, t, th);
      const Array g = staged([&](const Array& x) { return grad(f)(x); }, t, th);
      EXPECT_NEAR(v.item<double>(), fv.item<double>(), 1e-12 * std::abs(fv.item<double>())) << on;
      EXPECT_TRUE(all_close(g, vals(fg), 1e-10, 1e-12)) << on;
      EXPECT_TRUE(all_close(staged([&](const Array& x) { return jacrev(row)(x); }, t, th), vals(fj), 1e-10, 1e-12))
          << on;
      // reverse over reverse: d/dp of dL/dp against central differences of the gradient
      const double h = 1e-5;
      const double fd = (vals(fd_grad(0.3 + h))[0] - vals(fd_grad(0.3 - h))[0]) / (2 * h);
      auto dp = [&](const Array& x) { return np::index(grad(f)(x), {std::int64_t{0}}); };
      EXPECT_NEAR(vals(staged([&](const Array& x) { return grad(dp)(x); }, t, th))[0], fd, 1e-5 * (1 + std::abs(fd)))
          << on;
    }
  }
}

// The transposed scan at the edges: lengths 0 to 3 (no later segment, one, two), float32
// leaves, a scan of one leaf, in both directions, on every reverse-mode form.
TEST(AssociativeScan, ReverseModeAtShortLengths) {
  for (std::int64_t n : {0, 1, 2, 3})
    for (bool rev : {false, true}) {
      auto f = [n, rev](const Array& th) {
        Array t = np::arange(0, static_cast<double>(n), 1, DType::float32) * 0.3;
        Array a = np::exp(th * t) * 0.9, b = np::sin(th + t);
        auto r = jxt::affine_scan(a, b, rev);
        auto s = lax::associative_scan_flat(
            [](const std::vector<Array>& p, const std::vector<Array>& q) { return std::vector<Array>{p[0] * q[0]}; },
            {a + 1.0}, rev);
        return np::sum(r[1] * r[0]) + np::sum(s[0]);
      };
      Array th = np::array({0.4}, DType::float32);
      auto [fv, fg] = value_and_grad(f, argnums<0>, forward_mode)(th);
      for (const auto& [staged_for, budget] : {std::pair{"cpu", 0}, std::pair{"vulkan", 8}, std::pair{"cpu", 8}}) {
        const Target t = Target::for_jit(backend(staged_for), budget);
        const Array v = staged([&](const Array& x) { return f(x); }, t, th);
        const Array g = staged([&](const Array& x) { return grad(f)(x); }, t, th);
        EXPECT_NEAR(v.item<double>(), fv.item<double>(), 1e-5 * (1 + std::abs(fv.item<double>())))
            << n << rev << staged_for;
        EXPECT_TRUE(all_close(g, vals(fg), 1e-5, 1e-6)) << n << rev << staged_for;
      }
    }
}

TEST(AssociativeScan, VmapKeepsThePrimitiveBatchingOnlyWhatDependsOnTheBatch) {
  auto f = [](const Array& th) {
    Array t = np::reshape(np::arange(0, 46, 1, DType::float64) * 0.03, {2, 23});
    Array a = np::exp(th * t) * 0.9, b = np::sin(t), s = np::cos(t) * 0.1;
    Array k = np::reshape(np::arange(0, 46, 1, DType::int32), {2, 23});
    Array q = th * th;                    // closed over by the combine: a batched const
    auto r = lax::associative_scan_flat(  // x ↦ a x + b and x ↦ a x + s composed (associative); q makes a batched const
        [&](const std::vector<Array>& u, const std::vector<Array>& v) {
          return std::vector<Array>{v[0] * u[0], v[0] * u[1] + v[1] + q * 0.0, u[2] * v[0] + v[2], u[3] + v[3]};
        },
        {a, b, s, k}, /*reverse=*/true, /*axis=*/1);
    return np::sum(r[1] * r[2]) + np::sum(lax::convert_element_type(r[3], DType::float64)) * 1e-3;
  };
  Array ths = f64({0.3, -0.7, 0.1});
  auto j = make_jaxpr(vmap(f))(ths);
  EXPECT_EQ(count_eqns(j.jaxpr, Prim::associative_scan), 1u);
  EXPECT_EQ(strided_slices(j.jaxpr), 0u) << j.jaxpr.str();
  for (const Eqn& e : j.jaxpr.eqns)
    if (e.prim == Prim::associative_scan) {
      std::vector<Shape> outs;
      for (int o : e.out) outs.push_back(j.jaxpr.avals[o].shape);
      EXPECT_EQ(outs, (std::vector<Shape>{{2, 23, 3}, {2, 23, 3}, {2, 23, 3}, {2, 23}})) << j.jaxpr.str();
    }
  Array v = vmap(f)(ths), jv = jit(vmap(f))(ths);
  for (std::int64_t i = 0; i < 3; ++i) {
    const double want = f(np::index(ths, {i})).item<double>();
    EXPECT_NEAR(vals(v)[static_cast<std::size_t>(i)], want, 1e-12 * (1 + std::abs(want)));
    EXPECT_NEAR(vals(jv)[static_cast<std::size_t>(i)], want, 1e-12 * (1 + std::abs(want)));
  }
}
