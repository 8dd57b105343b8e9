// Compiled-loop scans (path "fused") on native against the cpu host loop.
#include "core/backends/backend.h"
#include "core/backends/native/compiler.h"
#include "core/instrument/instrument.h"
#include "core/trace/trace.h"
#include "scanpath/scan_path_tracker.h"
#include "tests/helpers.h"
#include "workloads/kalman/local_linear_trend.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
using AP = std::pair<Array, Array>;
Array f64(std::initializer_list<np::Nested> v) { return np::array(v, DType::float64); }

// Local linear trend Kalman filter (m = 2): returns -2 log L up to a constant, and the states.
struct KF {
  Array G = f64({{1.0, 1.0}, {0.0, 1.0}}), F = f64({{1.0, 0.0}});
  std::pair<Array, Array> operator()(const Array& logstd, const Array& ys) const {
    Array sd = np::exp(logstd);  // [3]: obs, level, slope
    Array V = np::reshape(np::index(sd, {std::int64_t{0}}) * np::index(sd, {std::int64_t{0}}), {1, 1});
    Array w = np::index(sd, {np::Slice{1, 3}});
    Array W = np::eye(2, {}, 0, DType::float64) * (w * w);
    using C = std::tuple<Array, Array, Array>;  // x, P, -2 log L
    auto step = [&](const C& c, const Array& y) {
      const auto& [x, P, ll] = c;
      Array xp = np::matmul(G, x);
      Array Pp = np::matmul(np::matmul(G, P), np::transpose(G)) + W;
      Array S = np::matmul(np::matmul(F, Pp), np::transpose(F)) + V;  // [1,1]
      Array Si = np::linalg::inv(S);
      Array K = np::matmul(np::matmul(Pp, np::transpose(F)), Si);  // [2,1]
      Array v = np::reshape(y, {1}) - np::matmul(F, xp);           // [1]
      Array xn = xp + np::reshape(np::matmul(K, v), {2});
      Array Pn = Pp - np::matmul(np::matmul(K, S), np::transpose(K));
      Array lln = ll + np::sum(np::log(S)) + np::sum(v * v * np::reshape(Si, {1}));
      return std::pair{C{xn, Pn, lln}, xn};
    };
    auto [c, xs] = lax::scan(
        step, C{f64({1000.0, 0.0}), np::eye(2, {}, 0, DType::float64) * 1e5, np::zeros({}, DType::float64)}, ys);
    return {std::get<2>(c), xs};
  }
};

Array nile_head() {
  return f64({1120.0, 1160.0, 963.0, 1210.0, 1160.0, 1160.0, 813.0, 1230.0, 1370.0, 1140.0, 995.0, 935.0, 1110.0, 994.0,
              1020.0, 960.0});
}
}  // namespace

TEST(NativeScan, CumsumIsOneFusedCall) {
  auto cumsum = [](const Array& xs) {
    return lax::scan([](const Array& s, const Array& x) { return AP{s + x, s + x}; }, np::zeros({}, xs.dtype()), xs);
  };
  Array x = np::arange(1, 101, 1, DType::float64);
  auto [wc, wy] = cumsum(x);
  DefaultDeviceScope native("native");
  Array xn = device_put(x, "native");
  {
    ScanPathTracker t;
    auto [c, y] = cumsum(xn);  // eager scan: compiled too
    t.expect_path(ScanPath::fused);
    EXPECT_DOUBLE_EQ(c.item<double>(), 5050.0);
    EXPECT_TRUE(all_close(y, vals(wy)));
  }
  auto jc = jit(cumsum);
  (void)jc(xn);
  ScanPathTracker t;
  trace::DispatchTracker d;
  auto [c, y] = jc(xn);
  t.expect_path(ScanPath::fused);
  EXPECT_EQ(d.count("scan"), 1);  // the whole 100-step scan is one call
  EXPECT_LE(d.dispatches(), 2u);  // plus the kernel that fills the initial carry
  EXPECT_DOUBLE_EQ(c.item<double>(), 5050.0);
  EXPECT_TRUE(all_close(y, vals(wy)));
}

TEST(NativeScan, BodiesOfEveryShapeMatchCpu) {
  auto run = [](const Array& m) {
    // pytree carry, a dict of xs with a transposed view, a captured constant, reverse
    Array w = np::ones({3}, DType::float64) * 0.5;
    std::map<std::string, Array> xs{{"cols", np::transpose(m)}, {"k", np::arange(0, 4, 1, DType::float64)}};
    auto body = [&](const std::pair<Array, Array>& c, const std::map<std::string, Array>& x) {
      Array a = c.first * w + x.at("cols");
      Array b = c.second + np::sum(a) * x.at("k");
      return std::pair{std::pair{a, b}, std::vector<Array>{a, np::exp(b * 0.01)}};
    };
    auto [c, ys] = lax::scan(body, std::pair{np::zeros({3}, DType::float64), np::zeros({}, DType::float64)}, xs,
                             {.reverse = true});
    auto [c0, y0] = lax::scan(
        [](const Array& s, const Array& x) {
          return AP{s + x, s};
        },
        np::ones({2}, DType::float64), np::zeros({0, 2}, DType::float64));
    auto [c1, y1] = lax::scan(
        [](const Array& s, const Array& x) {
          return AP{s * x, s};
        },
        np::ones({2}, DType::float64), np::ones({1, 2}, DType::float64) * 3.0);
    return std::vector<Array>{c.first, c.second, ys[0], ys[1], c0, y0, c1, y1};
  };
  Array m = np::reshape(np::arange(0, 12, 1, DType::float64), {3, 4});
  auto want = run(m);
  DefaultDeviceScope native("native");
  ScanPathTracker t;
  auto got = jit(run)(device_put(m, "native"));
  t.expect_path(ScanPath::fused);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape()) << i;
    EXPECT_TRUE(all_close(got[i], vals(want[i]), 1e-13, 1e-13)) << i;
  }
}

TEST(NativeScan, KalmanFilterWithRoutinesAndItsGradient) {
  KF kf;
  Array theta = f64({4.8, 3.3, 0.5});
  Array ys = nile_head();
  auto [ll, xs] = kf(theta, ys);
  Array g = grad([&](const Array& t) { return kf(t, ys).first; })(theta);
  DefaultDeviceScope native("native");
  Array tn = device_put(theta, "native"), yn = device_put(ys, "native");
  ScanPathTracker t;
  auto [lln, xsn] = jit(kf)(tn, yn);
  t.expect_path(ScanPath::fused);
  EXPECT_NEAR(lln.item<double>(), ll.item<double>(), 1e-9 * std::abs(ll.item<double>()));
  EXPECT_TRUE(all_close(xsn, vals(xs), 1e-10, 1e-8));
  ScanPathTracker tg;
  Array gn = jit(grad([&](const Array& th, const Array& y) { return kf(th, y).first; }))(tn, yn);
  tg.expect_path(ScanPath::fused);  // forward, tangent and transposed scans are all compiled loops
  EXPECT_GE(tg.choices().size(), 2u);
  EXPECT_TRUE(all_close(gn, vals(g), 1e-8, 1e-8));
}

TEST(NativeScan, RtsBackwardStepIsFusedWithConstantDispatches) {
  Array A = f64({{1.0, 0.5}, {0.0, 1.0}}), S = f64({{0.1, 0.0}, {0.0, 0.2}});
  using RN = std::pair<Array, Array>;
  auto rts = [&](const Array& bs) {
    return lax::scan(
               [&](const RN& c, const Array& b) {
                 RN next{np::matmul(np::transpose(A), c.first) + b,
                         np::matmul(np::matmul(np::transpose(A), c.second), A) + S};
                 return std::pair{next, next.first};
               },
               RN{np::zeros({2}, DType::float64), np::zeros({2, 2}, DType::float64)}, bs,
               {.reverse = true, .require_path = {ScanPath::fused}})
        .first;
  };
  DefaultDeviceScope native("native");
  auto jr = jit(rts);
  for (int n : {10, 100, 1000}) {
    Array bs = device_put(np::ones({n, 2}, DType::float64) * 0.01, "native");
    (void)jr(bs);
    trace::DispatchTracker d;
    RN out = jr(bs);
    EXPECT_EQ(d.count("scan"), 1) << n;
    EXPECT_LE(d.dispatches(), 3u) << n;  // the scan and the fills of the initial carries: independent of n
    EXPECT_TRUE(std::isfinite(out.second.to_vector<double>()[0]));
  }
}

TEST(NativeScan, RequirePathOnNative) {
  DefaultDeviceScope native("native");
  auto body = [](const Array& s, const Array& x) { return AP{s + x, s}; };
  EXPECT_TRUE(jxt::throws_msg<ScanPathError>(
      [&] { lax::scan(body, np::zeros({}), np::ones({4}), {.require_path = {ScanPath::fallback}}); },
      "Scan require_path not satisfied: got \"fused\" but required one of [fallback]"));
  auto [c, ys] = lax::scan(body, np::zeros({}), np::ones({4}), {.require_path = {ScanPath::fused}});
  EXPECT_DOUBLE_EQ(c.item<double>(), 4.0);
}

TEST(NativeScan, SlicingBodiesAndTheirTransposesMatchCpu) {
  // The workload filter indexes and stacks inside its body; its gradient's transposed body
  // pads (the transpose of slicing) and concatenates: all rendered inside the C loop.
  Array ys = workloads::simulate_local_linear_trend(40, 3);
  Array theta = np::log(f64({100.0, 30.0, 1.0}));
  auto vg =
      value_and_grad([](const Array& t, const Array& y) { return workloads::local_linear_trend_filter(t, y).first; });
  auto [v, g] = vg(theta, ys);
  DefaultDeviceScope native("native");
  ScanPathTracker t;
  auto [vn, gn] = jit(vg)(device_put(theta, "native"), device_put(ys, "native"));
  t.expect_path(ScanPath::fused);
  EXPECT_NEAR(vn.item<double>(), v.item<double>(), 1e-9 * std::abs(v.item<double>()));
  EXPECT_TRUE(all_close(gn, vals(g), 1e-8, 1e-8));
  auto concat_body = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          Array n = np::concatenate({np::index(c, {np::Slice{1, {}}}), np::reshape(x, {1})});  // shift in x
          return AP{n, np::sum(np::pad(n, {{1, 2}}, 0.5))};
        },
        np::zeros({3}, xs.dtype()), xs);
  };
  Array xs = np::arange(0, 10, 1, DType::float64);
  auto [wc, wy] = concat_body(xs);
  ScanPathTracker t2;
  auto [c, y] = jit(concat_body)(device_put(xs, "native"));
  t2.expect_path(ScanPath::fused);
  EXPECT_TRUE(all_close(c, vals(wc)));
  EXPECT_TRUE(all_close(y, vals(wy)));
}

namespace {
// Equal as float32 bit patterns: NaN where NaN, and the sign of every zero.
::testing::AssertionResult same_bits(const Array& got, const Array& want) {
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  if (g.size() != w.size()) return ::testing::AssertionFailure() << g.size() << " vs " << w.size() << " elements";
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool same = std::isnan(g[i]) ? std::isnan(w[i]) : g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]);
    if (!same) return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << w[i];
  }
  return ::testing::AssertionSuccess();
}
bool unrolled(const ScanPathTracker& t) { return t.choices().back().details.find("unrolled") != std::string::npos; }
}  // namespace

TEST(NativeScan, SmallBodiesUnrollAndMatchTheInterpreterBitForBit) {
  // float32 2x2 products (two-term sums accumulate in float there: exact), max, int32 and bool
  // arithmetic, a constant, reverse; terms of -0, inf and NaN along the way. A @ [-0, 1.5] sums
  // -0 + -0: +0 as the interpreter (which starts from the identity +0), never -0.
  auto run = [](const Array& xs, const Array& ks) {
    Array A = np::array({{1.0, -0.0}, {0.5, 2.0}}, DType::float32);  // on the device of the call
    auto body = [&](const std::tuple<Array, Array, Array>& c, const std::pair<Array, Array>& x) {
      const auto& [v, m, n] = c;
      Array v2 = np::matmul(A, v) * x.first + np::matmul(np::transpose(A), v * -0.0);
      Array m2 = np::maximum(m, np::max(v2));
      Array n2 = n + np::astype(np::greater(x.second, np::full({}, 2, DType::int32)), DType::int32) * x.second;
      return std::pair{
          std::tuple{v2, m2, n2},
          std::vector<Array>{np::sum(v2), np::astype(np::less(v2, np::zeros({}, DType::float32)), DType::int32),
                             np::matmul(A, v)}};
    };
    auto init = std::tuple{np::array({-0.0, 1.5}, DType::float32), np::full({}, -1e30, DType::float32),
                           np::zeros({}, DType::int32)};
    auto [c, ys] = lax::scan(body, init, std::pair{xs, ks}, {.reverse = true});
    return std::vector<Array>{std::get<0>(c), std::get<1>(c), std::get<2>(c), ys[0], ys[1], ys[2]};
  };
  Array xs = np::array({0.5, -0.0, 3.0, 1e30, 1e30, -2.0, 0.25, INFINITY, 1.0, NAN, 1.0}, DType::float32);
  Array ks = np::arange(0, 11, 1, DType::int32);
  std::vector<std::vector<Array>> want;
  {
    DefaultDeviceScope cpu("cpu");  // the interpreter, whatever JX_DEVICE says
    for (std::int64_t n : {3, 6, 11})
      want.push_back(run(device_put(np::index(xs, {np::Slice{0, n}}), "cpu"),
                         device_put(np::index(ks, {np::Slice{0, n}}), "cpu")));
  }
  DefaultDeviceScope native("native");
  auto jr = jit(run);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::int64_t n = std::vector<std::int64_t>{3, 6, 11}[i];
    ScanPathTracker t;
    auto got = jr(device_put(np::index(xs, {np::Slice{0, n}}), "native"),
                  device_put(np::index(ks, {np::Slice{0, n}}), "native"));
    t.expect_path(ScanPath::fused);
    EXPECT_TRUE(unrolled(t)) << t.choices().back().details;
    for (std::size_t j = 0; j < got.size(); ++j)
      EXPECT_TRUE(same_bits(got[j], want[i][j])) << "n " << n << " output " << j;
  }
}

// A Kalman-like body whose sums meet −0 terms (−0 states and noise, −0 and 0 in the matrices,
// products that underflow, inf and NaN): the sums whose results only feed products summed again
// (C·F, G·C, G·m) and the carried C and m start from their first term, and every output (ys and
// final carries, where the loose carries get +0 added) still equals the interpreter's bit for bit.
TEST(NativeScan, SumsFromTheirFirstTermKeepTheInterpretersSignsOfZero) {
  auto run = [](const Array& xs) {
    const DType f = DType::float32;
    Array G = np::array({{1.0, -0.0}, {0.0, 1.0}}, f), F = np::array({1.0, -0.0}, f),
          W = np::array({{-0.0, -0.0}, {-0.0, -0.0}}, f);
    auto body = [&](const std::pair<Array, Array>& c, const Array& x) {
      const auto& [C, m] = c;
      Array CF = np::matmul(C, F);
      Array Q = np::matmul(F, CF) + x * x;
      Array K = np::matmul(G, CF) * (x / Q);
      Array L = G - np::reshape(K, {2, 1}) * np::reshape(F, {1, 2});
      Array C2 = np::matmul(np::matmul(G, C), np::transpose(L)) + W;
      Array m2 = np::matmul(G, m) + K * x;
      return std::pair{std::pair{C2, m2}, std::vector<Array>{C, m, Q, K}};
    };
    auto init = std::pair{np::array({{-0.0, -0.0}, {-0.0, 1.0}}, f), np::array({-0.0, -0.0}, f)};
    auto [c, ys] = lax::scan(body, init, xs);
    return std::vector<Array>{c.first, c.second, ys[0], ys[1], ys[2], ys[3]};
  };
  Array xs = np::array({2.0, 1.5, 1e-30, -1e-30, 0.5, -0.0, INFINITY, 1.0, 0.0, NAN, 0.5}, DType::float32);
  for (std::int64_t n : {2, 5, 11}) {
    Array x = np::index(xs, {np::Slice{0, n}});
    std::vector<Array> want;
    {
      DefaultDeviceScope cpu("cpu");
      want = run(device_put(x, "cpu"));
    }
    DefaultDeviceScope native("native");
    ScanPathTracker t;
    auto got = jit(run)(device_put(x, "native"));
    t.expect_path(ScanPath::fused);
    EXPECT_TRUE(unrolled(t)) << t.choices().back().details;
    EXPECT_NE(t.choices().back().details.find("sums start from their first term"), std::string::npos)
        << t.choices().back().details;
    for (std::size_t j = 0; j < got.size(); ++j)
      EXPECT_TRUE(same_bits(got[j], want[j])) << "n " << n << " output " << j;
  }
}

TEST(NativeScan, LargeBodiesLoopOverTheirKernels) {
  // a 48x48 matmul per step is beyond the unrolling budget: kernels stay loops over a block
  auto run = [](const Array& m, const Array& xs) {
    return lax::scan(
        [&](const Array& c, const Array& x) {
          return AP{np::tanh(np::matmul(m, c) * x), np::sum(c)};
        },
        np::ones({48, 48}, DType::float32) * 0.1, xs);
  };
  Array m = np::reshape(np::sin(np::arange(0, 48 * 48, 1, DType::float32)), {48, 48}) * 0.2;
  Array xs = np::array({1.0, -0.5, 2.0, 0.75}, DType::float32);
  auto [wc, wy] = run(m, xs);
  DefaultDeviceScope native("native");
  ScanPathTracker t;
  auto [c, y] = jit(run)(device_put(m, "native"), device_put(xs, "native"));
  t.expect_path(ScanPath::fused);
  EXPECT_FALSE(unrolled(t)) << t.choices().back().details;
  EXPECT_TRUE(all_close(c, vals(wc), 1e-5, 1e-6));  // tanhf in C, the interpreter's in double
  EXPECT_TRUE(all_close(y, vals(wy), 1e-5, 1e-5));
}

// Associative scans on native (core/backends/native/c_assoc.cc): the blocked scan on threads,
// its subnormal flushing, and the gradient's form, which follows the thread count.
// Reverse mode on native follows its threads (BackendLimits::parallel_assoc_scans, 4 or more:
// ctest's native_threads run sets OMP_NUM_THREADS=4): with them the gradient keeps the scan
// associative (the pair scan forward, its transposed triple scan backward, both blocked scans
// on threads), without them it linearizes the sequential fold (one compiled loop each way).
// Either way the interpreter's gradient.
TEST(NativeAssocScan, GradFollowsItsThreads) {
  auto loss = [](const Array& th) {
    Array t = np::arange(0, 1000, 1, DType::float64) * 0.001;
    Array a = np::exp(th * t) * 0.999, b = np::sin(th + t);
    auto r = jxt::affine_scan(a, b);
    return np::sum(r[1] * r[1]);
  };
  Array th = np::full({}, 0.3, DType::float64);
  double want = 0;
  {
    DefaultDeviceScope cpu("cpu");
    want = grad(loss)(device_put(th, "cpu")).item<double>();
  }
  DefaultDeviceScope native("native");
  auto g = jit(grad(loss));
  const Array x = device_put(th, "native");
  (void)g(x);
  trace::DispatchTracker d;
  const double got = g(x).item<double>();
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want));
  if (backend("native").info().limits.parallel_assoc_scans) {
    EXPECT_GE(d.count("associative_scan"), 2);
    EXPECT_EQ(d.count("scan"), 0);
  } else {
    EXPECT_GE(d.count("scan"), 2);
  }
}

// The blocked scan flushes subnormals to zero (as JAX on the CPU does: XLA's CPU runtime runs
// with FTZ/DAZ), JX_NATIVE_FTZ=0 keeps them: prefix products of 0.5 in float32 are 2^-(i+1),
// subnormal from position 126 on. Powers of two multiply exactly, so unflushed the blocked
// scan's products equal the interpreter's bit for bit in any order.
TEST(NativeAssocScan, BlockedScanFlushesSubnormals) {
  auto f = [](const Array& a) {
    return lax::associative_scan_flat(
        [](const std::vector<Array>& p, const std::vector<Array>& q) { return std::vector<Array>{q[0] * p[0]}; },
        {a})[0];
  };
  Array a = np::full({300}, 0.5, DType::float32);
  std::vector<float> want;
  {
    DefaultDeviceScope cpu("cpu");
    want = jit(f)(device_put(a, "cpu")).to_vector<float>();
  }
  ASSERT_EQ(want[126], std::ldexp(1.0f, -127));
  for (const char* ftz : {"1", "0"}) {
    SCOPED_TRACE(ftz);
    setenv("JX_NATIVE_FTZ", ftz, 1);
    clear_caches();
    DefaultDeviceScope native("native");
    trace::DispatchTracker d;
    const auto got = jit(f)(device_put(a, "native")).to_vector<float>();
    unsetenv("JX_NATIVE_FTZ");
    // the blocked scan, unless this machine's compiler has no OpenMP (then the fold, unflushed)
    const bool blocked = !native::openmp_flag().empty();
    EXPECT_EQ(d.count(blocked ? "associative_scan" : "scan"), 1);
    const bool flushed = blocked && std::string(ftz) == "1";
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(got[125], std::ldexp(1.0f, -126));  // the smallest normal float
    for (std::size_t i = 126; i < got.size(); ++i) EXPECT_EQ(got[i], flushed ? 0.0f : want[i]) << i;
  }
  clear_caches();
}

// native runs a jitted associative scan as one compiled routine: the blocked scan on threads
// (chunks folded in parallel, then their prefixes), or with JX_NATIVE_ASSOC=0 the fold as one
// compiled loop; either way one dispatch whatever n, and the values of the interpreter's recursion
TEST(NativeAssocScan, JitIsOneCompiledRoutine) {
  auto f = [](const Array& a, const Array& b) { return jxt::affine_scan(a, b); };
  for (const char* mode : {"blocked", "fold"}) {
    SCOPED_TRACE(mode);
    const bool fold = std::string(mode) == "fold";
    if (fold) setenv("JX_NATIVE_ASSOC", "0", 1);
    clear_caches();  // the plans are cached per program
    std::vector<std::size_t> counts;
    for (int n : {100, 10000}) {
      Array a = np::full({n}, 0.999, DType::float64), b = np::ones({n}, DType::float64);
      auto want = f(a, b);
      DefaultDeviceScope native("native");
      auto jf = jit(f);
      auto args = std::vector<Array>{device_put(a, "native"), device_put(b, "native")};
      (void)jf(args[0], args[1]);
      ScanPathTracker t;
      trace::DispatchTracker d;
      auto got = jf(args[0], args[1]);
      if (fold || native::openmp_flag().empty()) {  // without OpenMP: the fold
        t.expect_path(ScanPath::fused);
        EXPECT_EQ(d.count("scan"), 1);
      } else {
        EXPECT_EQ(d.count("associative_scan"), 1);
      }
      counts.push_back(d.dispatches());
      EXPECT_TRUE(all_close(got[1], vals(want[1]), 1e-12, 1e-12));
      // reversed too: y_i = x_i ∘ … ∘ x_{n-1} (the later elements are the prefix)
      auto rf = jit([](const Array& a, const Array& b) { return jxt::affine_scan(a, b, true); });
      auto rwant = jxt::affine_scan(a, b, true);
      EXPECT_TRUE(all_close(rf(args[0], args[1])[1], vals(rwant[1]), 1e-12, 1e-12));
    }
    if (fold) unsetenv("JX_NATIVE_ASSOC");
    clear_caches();
    EXPECT_EQ(counts[0], counts[1]);
  }
}
