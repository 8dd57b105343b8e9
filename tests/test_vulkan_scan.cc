// Scans on vulkan: the planner's paths (fused one-invocation-per-element, fused single workgroup,
// preencoded, fallback), their dispatch counts, and values against the cpu oracle (associative
// scans: test_vulkan_assoc_scan.cc, in the same binary). Registered twice in ctest like
// test_vulkan (plain and under the validation layer).
#include "core/instrument/instrument.h"
#include "scanpath/scan_path_tracker.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::dispatches_of;
using jxt::on;
using jxt::ScopedEnv;
using jxt::vals;

namespace {
using AP = std::pair<Array, Array>;
Array f64(std::initializer_list<np::Nested> v) { return np::array(v, DType::float64); }

std::string details_of(const ScanPathTracker& t) { return t.choices().empty() ? "" : t.choices().back().details; }

// r' = Aᵀ r + b, N' = Aᵀ N A + S (m = 2), backwards: the RTS smoother's backward step.
std::pair<AP, Array> rts(const Array& A, const Array& S, const Array& bs) {
  auto [fin, hist] = lax::scan(
      [&](const AP& c, const Array& b) {
        AP next{np::matmul(np::transpose(A), c.first) + b, np::matmul(np::matmul(np::transpose(A), c.second), A) + S};
        return std::pair{next, next.first};
      },
      AP{np::zeros({2}, A.dtype()), np::zeros({2, 2}, A.dtype())}, bs, {.reverse = true});
  return {fin, hist};
}

// Local linear trend Kalman filter (m = 2, scalar observations, 1/S by division): -2 log L.
Array kalman_loglik(const Array& logstd, const Array& ys) {
  const DType d = ys.dtype();
  Array G = np::array({{1.0, 1.0}, {0.0, 1.0}}, d), F = np::array({{1.0, 0.0}}, d);
  Array sd = np::exp(logstd);
  Array V = np::index(sd, {std::int64_t{0}}) * np::index(sd, {std::int64_t{0}});
  Array w = np::index(sd, {np::Slice{1, 3}});
  Array W = np::eye(2, {}, 0, d) * (w * w);
  using C = std::tuple<Array, Array, Array>;
  auto step = [&](const C& c, const Array& y) {
    const auto& [x, P, ll] = c;
    Array xp = np::matmul(G, x);
    Array Pp = np::matmul(np::matmul(G, P), np::transpose(G)) + W;
    Array S = np::sum(np::matmul(np::matmul(F, Pp), np::transpose(F))) + V;
    Array K = np::reshape(np::matmul(Pp, np::transpose(F)), {2}) / S;
    Array v = y - np::sum(np::matmul(F, xp));
    Array xn = xp + K * v;
    Array Pn = Pp - np::reshape(K, {2, 1}) * np::reshape(K, {1, 2}) * S;
    return std::pair{C{xn, Pn, ll + np::log(S) + v * v / S}, xn};
  };
  auto [c, xs] = lax::scan(step, C{np::array({1000.0, 0.0}, d), np::eye(2, {}, 0, d) * 1e5, np::zeros({}, d)}, ys);
  return std::get<2>(c);
}

Array nile(int n, DType d) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(1000.0 + 150.0 * std::sin(0.3 * i) + 40.0 * std::cos(1.7 * i));
  return np::asarray(std::span<const double>(v), Shape{static_cast<std::int64_t>(n)}, d);
}

}  // namespace

TEST(VulkanScan, CumsumIsOneDispatchWhateverTheLength) {
  auto cumsum = [](const Array& xs) {
    return lax::scan([](const Array& s, const Array& x) { return AP{s + x, s + x}; }, np::zeros({3}, xs.dtype()), xs);
  };
  for (DType d : {DType::float32, DType::float64}) {
    std::vector<std::uint64_t> counts;
    for (int n : {100, 1000}) {
      Array x = np::reshape(np::arange(0, 3 * n, 1, d), {n, 3});
      auto [wc, wy] = cumsum(x);
      DefaultDeviceScope vk("vulkan");
      Array xv = device_put(x, "vulkan");
      {
        ScanPathTracker t;
        auto [c, y] = cumsum(xv);  // eager
        t.expect_path(ScanPath::fused);
        EXPECT_NE(details_of(t).find("one invocation per element"), std::string::npos) << details_of(t);
        EXPECT_TRUE(all_close(c, vals(wc), 1e-6, 0));
        EXPECT_TRUE(all_close(y, vals(wy), 1e-6, 0));
      }
      auto jc = jit(cumsum);
      ScanPathTracker t;
      counts.push_back(dispatches_of([&] { (void)jc(xv); }));
      t.expect_path(ScanPath::fused);
      auto [c, y] = jc(xv);
      EXPECT_TRUE(all_close(y, vals(wy), 1e-6, 0));
    }
    EXPECT_EQ(counts[0], counts[1]);
    EXPECT_LE(counts[0], 2u);  // the scan, and the kernel that fills the initial carry
  }
}

TEST(VulkanScan, FactorialWithForiLoopAndIntCarries) {
  DefaultDeviceScope vk("vulkan");
  ScanPathTracker t;
  Array f = lax::fori_loop(
      1, 11, [](const Array& i, const Array& acc) { return acc * np::astype(i, DType::float64); },
      np::ones({}, DType::float64));
  t.expect_path(ScanPath::fused);
  EXPECT_DOUBLE_EQ(f.item<double>(), 3628800.0);
  Array none = lax::fori_loop(
      3, 3, [](const Array&, const Array& acc) { return acc * 2.0; }, np::ones({}, DType::float64));
  EXPECT_DOUBLE_EQ(none.item<double>(), 1.0);
  auto [c, y] = lax::scan(
      [](const Array& c, const Array& i) {
        return AP{c * i, c};
      },
      np::ones({}, DType::int32), np::arange(1, 11, 1, DType::int32));
  EXPECT_EQ(c.item<std::int32_t>(), 3628800);
  EXPECT_EQ(vals(y).back(), 362880.0);
}

TEST(VulkanScan, BodiesOfEveryShapeMatchCpu) {
  auto run = [](const Array& m) {
    // pytree carry, a dict of xs with a transposed view, a captured constant, reverse, lengths 0 and 1
    Array w = np::ones({3}, m.dtype()) * 0.5;
    std::map<std::string, Array> xs{{"cols", np::transpose(m)}, {"k", np::arange(0, 4, 1, m.dtype())}};
    auto body = [&](const std::pair<Array, Array>& c, const std::map<std::string, Array>& x) {
      Array a = c.first * w + x.at("cols");
      Array b = c.second + np::sum(a) * x.at("k");
      return std::pair{std::pair{a, b},
                       std::vector<Array>{a, np::exp(b * 0.01), np::greater(a, np::full({}, 2.0, a.dtype()))}};
    };
    auto [c, ys] =
        lax::scan(body, std::pair{np::zeros({3}, m.dtype()), np::zeros({}, m.dtype())}, xs, {.reverse = true});
    auto [c0, y0] = lax::scan(
        [](const Array& s, const Array& x) {
          return AP{s + x, s};
        },
        np::ones({2}, m.dtype()), np::zeros({0, 2}, m.dtype()));
    auto [c1, y1] = lax::scan(
        [](const Array& s, const Array& x) {
          return AP{s * x, s};
        },
        np::ones({2}, m.dtype()), np::ones({1, 2}, m.dtype()) * 3.0);
    return std::vector<Array>{c.first, c.second, ys[0], ys[1], ys[2], c0, y0, c1, y1};
  };
  for (DType d : {DType::float32, DType::float64}) {
    Array m = np::reshape(np::arange(0, 12, 1, d), {3, 4});
    auto want = run(m);
    for (bool jitted : {false, true}) {
      DefaultDeviceScope vk("vulkan");
      ScanPathTracker t;
      auto got = jitted ? jit(run)(device_put(m, "vulkan")) : run(device_put(m, "vulkan"));
      t.expect_path(ScanPath::fused);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].shape(), want[i].shape()) << i;
        EXPECT_EQ(got[i].dtype(), want[i].dtype()) << i;
        EXPECT_TRUE(all_close(got[i], vals(want[i]), d == DType::float64 ? 1e-13 : 1e-5, 1e-6))
            << i << " jit " << jitted;
      }
    }
  }
}

TEST(VulkanScan, RtsBackwardStepIsOneWorkgroupWithConstantDispatches) {
  for (DType d : {DType::float32, DType::float64}) {
    Array A = np::array({{1.0, 0.5}, {0.0, 1.0}}, d), S = np::array({{0.1, 0.0}, {0.0, 0.2}}, d);
    std::vector<std::uint64_t> counts;
    for (int n : {100, 400, 1600}) {
      Array bs = np::reshape(np::sin(np::arange(0, 2 * n, 1, d) * 0.1), {n, 2});
      auto [wfin, whist] = rts(A, S, bs);
      auto f = jit([](const Array& a, const Array& s, const Array& b) {
        auto [fin, hist] = rts(a, s, b);
        return std::vector<Array>{fin.first, fin.second, hist};
      });
      DefaultDeviceScope vk("vulkan");
      auto args = on({A, S, bs}, "vulkan");
      ScanPathTracker t;
      counts.push_back(dispatches_of([&] { (void)f(args[0], args[1], args[2]); }));
      t.expect_path(ScanPath::fused);
      EXPECT_NE(details_of(t).find("one workgroup"), std::string::npos) << details_of(t);
      auto got = f(args[0], args[1], args[2]);
      const double tol = d == DType::float64 ? 1e-12 : 1e-4;
      EXPECT_TRUE(all_close(got[0], vals(wfin.first), tol, tol));
      EXPECT_TRUE(all_close(got[1], vals(wfin.second), tol, tol));
      EXPECT_TRUE(all_close(got[2], vals(whist), tol, tol));
      // eager: the same loop
      ScanPathTracker te;
      auto [efin, ehist] = rts(args[0], args[1], args[2]);
      te.expect_path(ScanPath::fused);
      EXPECT_TRUE(all_close(ehist, vals(whist), tol, tol));
    }
    EXPECT_EQ(counts[0], counts[1]);
    EXPECT_EQ(counts[1], counts[2]);
  }
}

TEST(VulkanScan, KalmanFilterAndItsGradientAreFused) {
  Array theta = f64({4.8, 3.3, 0.5});
  Array ys = nile(200, DType::float64);
  const double ll = kalman_loglik(theta, ys).item<double>();
  Array g = grad(kalman_loglik)(theta, ys);
  auto tv = on({theta, ys}, "vulkan");
  ScanPathTracker t;
  Array llv = jit(kalman_loglik)(tv[0], tv[1]);
  t.expect_path(ScanPath::fused);
  EXPECT_NEAR(llv.item<double>(), ll, 1e-9 * std::abs(ll));
  ScanPathTracker tg;
  Array gv = jit(grad(kalman_loglik))(tv[0], tv[1]);
  tg.expect_path(ScanPath::fused);  // forward, linearized and transposed scans are all one shader
  EXPECT_GE(tg.choices().size(), 2u);
  EXPECT_TRUE(all_close(gv, vals(g), 1e-8, 1e-8));
}

TEST(VulkanScan, PackedOperandsKeepTheWebGpuLimit) {
  // 12 operands and results: the fused scan still binds two buffers
  auto f = [](const std::vector<Array>& xs) {
    std::vector<Array> init(xs.begin(), xs.begin() + 6);
    std::vector<Array> seq(xs.begin() + 6, xs.end());
    return lax::scan(
        [](const std::vector<Array>& c, const std::vector<Array>& x) {
          std::vector<Array> n;
          for (std::size_t i = 0; i < c.size(); ++i) n.push_back(c[i] * 0.5 + x[i] + c[(i + 1) % c.size()]);
          return std::pair{n, n[0]};
        },
        init, seq);
  };
  std::vector<Array> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(np::ones({4}, DType::float32) * static_cast<double>(i));
  for (int i = 0; i < 6; ++i)
    xs.push_back(np::reshape(np::arange(0, 40, 1, DType::float32) * static_cast<double>(i + 1), {10, 4}));
  auto want = f(xs);
  vulkan::set_limits("webgpu");
  vulkan::reset_counters();
  trace::DispatchTracker dt;
  ScanPathTracker t;
  auto got = jit(f)(on(xs, "vulkan"));
  t.expect_path(ScanPath::fused);
  EXPECT_LE(vulkan::counters().max_buffers_per_dispatch, 8u);
  EXPECT_LE(dt.max_buffers(), 8);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_TRUE(all_close(got.first[i], vals(want.first[i]), 1e-6, 1e-6)) << i;
  EXPECT_TRUE(all_close(got.second, vals(want.second), 1e-6, 1e-6));
}

TEST(VulkanScan, ConcatenateBodiesAreFusedInOneWorkgroup) {
  // concatenate (and pad, argmax) are inlined into the loop shader like kernels
  auto f = [](const Array& init, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          Array n = np::concatenate({np::index(c, {np::Slice{1, 3}}), x}, 0) * 0.5 + np::sum(c);
          return AP{n, n};
        },
        init, xs);
  };
  Array init = np::ones({3}, DType::float64), xs = np::reshape(np::arange(0, 20, 1, DType::float64), {20, 1});
  auto [wc, wy] = f(init, xs);
  auto args = on({init, xs}, "vulkan");
  auto jf = jit(f);
  (void)jf(args[0], args[1]);
  vulkan::synchronize();
  vulkan::reset_counters();
  ScanPathTracker t;
  auto [c, y] = jf(args[0], args[1]);
  t.expect_path(ScanPath::fused);
  EXPECT_NE(details_of(t).find("one workgroup"), std::string::npos) << details_of(t);
  vulkan::synchronize();
  const auto k = vulkan::counters();
  EXPECT_EQ(k.submits, 1u);
  EXPECT_EQ(k.host_waits, 1u);
  EXPECT_EQ(k.dispatches, 1u);
  EXPECT_TRUE(all_close(c, vals(wc), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(y, vals(wy), 1e-12, 1e-12));
}

TEST(VulkanScan, LargeStateIsPreencodedAndLinearAlgebraIsFused) {
  // 8192 floats of carry with a reduction: over 16384 bytes of workgroup memory
  auto big = [](const Array& init, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return AP{c * 0.5 + np::sum(c) * 1e-4 + x, np::sum(c)};
        },
        init, xs);
  };
  Array init = np::ones({8192}, DType::float32), xs = np::ones({5, 8192}, DType::float32);
  auto [wc, wy] = big(init, xs);
  auto a = on({init, xs}, "vulkan");
  auto jb = jit(big);
  (void)jb(a[0], a[1]);
  vulkan::synchronize();
  vulkan::reset_counters();
  ScanPathTracker t;
  auto [c, y] = jb(a[0], a[1]);
  t.expect_path(ScanPath::preencoded);
  EXPECT_NE(details_of(t).find("workgroup memory"), std::string::npos) << details_of(t);
  vulkan::synchronize();
  const auto k = vulkan::counters();
  EXPECT_EQ(k.submits, 1u);  // every step's dispatches in one submission
  EXPECT_EQ(k.host_waits, 1u);
  EXPECT_GE(k.dispatches, 5u * 2u);  // linear in the length
  EXPECT_TRUE(all_close(c, vals(wc), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(y, vals(wy), 1e-5, 1e-5));

  // cholesky inlines into the fused body (glsl_linalg.cc): one shader, no host routine
  auto chol = [](const Array& init, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          Array L = np::linalg::cholesky(c + np::eye(2, {}, 0, DType::float64) * x);
          return AP{np::matmul(L, np::transpose(L)), L};
        },
        init, xs);
  };
  Array c0 = np::eye(2, {}, 0, DType::float64), cx = np::arange(1, 4, 1, DType::float64);
  auto [wcc, wcy] = chol(c0, cx);
  auto b = on({c0, cx}, "vulkan");
  ScanPathTracker tf;
  auto [cc, cy] = jit(chol)(b[0], b[1]);
  tf.expect_path(ScanPath::fused);
  EXPECT_TRUE(all_close(cy, vals(wcy), 1e-12, 1e-12));
  EXPECT_TRUE(jxt::throws_with<ScanPathError>(
      [&] {
        (void)lax::scan(
            [](const Array& c, const Array& x) {
              return AP{np::linalg::cholesky(c) * x, c};
            },
            b[0], b[1], {.require_path = {ScanPath::preencoded}});
      },
      {"Scan require_path not satisfied: got \"fused\" but required one of [preencoded]"}));
}

TEST(VulkanScan, VmapOfScanAndScanOfGradient) {
  auto cum = [](const Array& x) {
    return lax::scan(
               [](const Array& s, const Array& v) {
                 return AP{s * 0.9 + v, s};
               },
               np::zeros({}, x.dtype()), x)
        .first;
  };
  Array xs = np::reshape(np::arange(0, 24, 1, DType::float64), {4, 6});
  Array want = vmap(cum)(xs);
  ScanPathTracker t;
  Array got = jit(vmap(cum))(device_put(xs, "vulkan"));
  t.expect_path(ScanPath::fused);
  EXPECT_TRUE(all_close(got, vals(want), 1e-12, 1e-12));
  Array g = grad([&](const Array& x) { return np::sum(vmap(cum)(x)); })(xs);
  Array gv = jit(grad([&](const Array& x) { return np::sum(vmap(cum)(x)); }))(device_put(xs, "vulkan"));
  EXPECT_TRUE(all_close(gv, vals(g), 1e-12, 1e-12));
}

TEST(VulkanScan, ArgmaxBodiesAreFusedNestedScansFallBackSlicedXs) {
  // argmax is inlined into the loop shader; xs is a strided slice of a bigger array
  auto am = [](const Array& m) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return AP{c + x, np::argmax(c + x)};
        },
        np::zeros({4}, m.dtype()), np::index(m, {np::Slice{0, 12, 2}}));
  };
  Array m = np::reshape(np::sin(np::arange(0, 48, 1, DType::float64)), {12, 4});
  auto [wc, wy] = am(m);
  // a scan inside a scan body: the outer one runs as a host loop, the inner ones are fused
  auto nested = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& row) {
          auto [s, ys] = lax::scan([](const Array& a, const Array& v) { return AP{a * 0.5 + v, a}; }, c, row);
          return AP{s, ys};
        },
        np::zeros({}, xs.dtype()), xs);
  };
  Array xs = np::reshape(np::arange(0, 12, 1, DType::float64), {3, 4});
  auto [nc, ny] = nested(xs);
  DefaultDeviceScope vk("vulkan");
  ScanPathTracker t;
  auto [c, y] = jit(am)(device_put(m, "vulkan"));
  t.expect_path(ScanPath::fused);
  EXPECT_TRUE(all_close(c, vals(wc), 1e-12, 1e-12));
  EXPECT_EQ(vals(y), vals(wy));
  ScanPathTracker tn;
  auto [gc, gy] = jit(nested)(device_put(xs, "vulkan"));
  ASSERT_FALSE(tn.choices().empty());
  EXPECT_EQ(tn.choices().front().path, ScanPath::fallback);
  EXPECT_NE(tn.choices().front().details.find("nested scan"), std::string::npos) << tn.choices().front().details;
  EXPECT_TRUE(all_close(gc, vals(nc), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(gy, vals(ny), 1e-12, 1e-12));
}

TEST(VulkanScan, SwappedCarriesAndOldCarryOutputsAreStaged) {
  // the carries swap and a y is the old carry: each rewritten carry goes through a staging
  // buffer (a local array in single-invocation bodies); a reduction keeps the body off the
  // elementwise path
  auto run = [](const Array& a0, const Array& b0, const Array& xs) {
    return lax::scan(
        [](const AP& c, const Array& x) {
          return std::pair{AP{c.second, c.first * 0.5 + np::sum(c.second) * 0.25 + x}, c.first};
        },
        AP{a0, b0}, xs);
  };
  for (DType d : {DType::float32, DType::float64}) {
    Array a0 = np::arange(0, 3, 1, d), b0 = np::ones({3}, d) * 2.0,
          xs = np::reshape(np::arange(0, 15, 1, d), {5, 3}) * 0.1;
    auto [wc, wy] = run(a0, b0, xs);
    DefaultDeviceScope vk("vulkan");
    ScanPathTracker t;
    auto v = on({a0, b0, xs}, "vulkan");
    auto [c, y] = jit(run)(v[0], v[1], v[2]);
    t.expect_path(ScanPath::fused);
    const double tol = d == DType::float64 ? 1e-13 : 1e-5;
    EXPECT_TRUE(all_close(c.first, vals(wc.first), tol, tol));
    EXPECT_TRUE(all_close(c.second, vals(wc.second), tol, tol));
    EXPECT_TRUE(all_close(y, vals(wy), tol, tol));
  }
}

// A vmapped scan whose batched body would take one workgroup for the whole batch runs its
// unbatched body per series: an invocation per series where every buffer fits one invocation
// (the m = 2 filter), a workgroup per series otherwise; batched and shared consts and xs, and
// values equal to the cpu oracle and to the batched form (JX_VK_SERIES=0).
TEST(VulkanScan, VmappedScansRunPerSeries) {
  for (DType d : {DType::float32, DType::float64}) {
    std::vector<std::uint64_t> counts;
    for (std::int64_t B : {3, 100}) {
      const int n = 40;
      Array ys = np::reshape(nile(n * static_cast<int>(B), d), {B, n});
      Array ls = np::reshape(np::astype(lax::iota(DType::int32, {B * 3}, 0), d), {B, 3}) * 0.01 + 3.0;
      auto f = [](const Array& l, const Array& y) { return kalman_loglik(l, y); };
      Array want = vmap(f)(ls, ys), want_shared = vmap(f, {0, std::nullopt})(ls, np::index(ys, {std::int64_t{0}}));
      Array lv = device_put(ls, "vulkan"), yv = device_put(ys, "vulkan");
      auto jf = jit(vmap(f));
      ScanPathTracker t;
      Array got = jf(lv, yv);
      t.expect_path(ScanPath::fused);
      EXPECT_NE(details_of(t).find(fmt::format("per series ({} invocations)", B)), std::string::npos) << details_of(t);
      const double tol = d == DType::float32 ? 1e-4 : 1e-10;
      EXPECT_TRUE(all_close(got, vals(want), tol, 0));
      counts.push_back(dispatches_of([&] { (void)jf(lv, yv); }));
      Array shared = jit(vmap(f, {0, std::nullopt}))(lv, device_put(np::index(ys, {std::int64_t{0}}), "vulkan"));
      EXPECT_NE(details_of(t).find("per series"), std::string::npos) << details_of(t);
      EXPECT_TRUE(all_close(shared, vals(want_shared), tol, 0));
      ScopedEnv off("JX_VK_SERIES", "0");
      clear_caches();  // the jit program holds its plan
      ScanPathTracker t0;
      Array batched = jit(vmap(f))(lv, yv);
      EXPECT_EQ(details_of(t0).find("per series"), std::string::npos) << details_of(t0);
      EXPECT_TRUE(all_close(batched, vals(want), tol, 0));
      clear_caches();
    }
    EXPECT_EQ(counts[0], counts[1]);  // the batch is parallel work, not more dispatches
  }
  {  // the gradient's scans (forward and transposed) per series too
    const std::int64_t B = 5;
    Array ys = np::reshape(nile(30 * B, DType::float64), {B, 30});
    Array ls = np::full({B, 3}, 3.0, DType::float64);
    auto g = [](const Array& l, const Array& y) {
      return grad([&](const Array& a) { return kalman_loglik(a, y); })(l);
    };
    Array want = vmap(g)(ls, ys);
    ScanPathTracker t;
    Array got = jit(vmap(g))(device_put(ls, "vulkan"), device_put(ys, "vulkan"));
    ASSERT_GE(t.choices().size(), 2u);
    for (const auto& c : t.choices()) EXPECT_NE(c.details.find("per series (5 "), std::string::npos) << c.details;
    EXPECT_TRUE(all_close(got, vals(want), 1e-9, 1e-9));
  }
  // m = 5, reversed: a workgroup per series (25-element buffers), A batched, S shared
  const std::int64_t B = 6, m = 5, n = 30;
  Array A = np::reshape(np::sin(np::arange(0, B * m * m, 1, DType::float64) * 0.37), {B, m, m}) * 0.3;
  Array S = np::eye(m, {}, 0, DType::float64) * 0.1;
  Array bs = np::reshape(np::cos(np::arange(0, B * n * m, 1, DType::float64) * 0.11), {B, n, m});
  auto rts_m = [&](const Array& a, const Array& b) {
    auto [fin, hist] = lax::scan(
        [&](const AP& c, const Array& x) {
          AP next{np::matmul(np::transpose(a), c.first) + x, np::matmul(np::matmul(np::transpose(a), c.second), a) + S};
          return std::pair{next, next.first};
        },
        AP{np::zeros({m}, a.dtype()), np::zeros({m, m}, a.dtype())}, b, {.reverse = true});
    return std::vector<Array>{fin.first, fin.second, hist};
  };
  auto want = vmap(rts_m)(A, bs);
  ScanPathTracker t;
  auto got = jit(vmap(rts_m))(device_put(A, "vulkan"), device_put(bs, "vulkan"));
  t.expect_path(ScanPath::fused);
  EXPECT_NE(details_of(t).find(fmt::format("per series ({} workgroups)", B)), std::string::npos) << details_of(t);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(all_close(got[i], vals(want[i]), 1e-12, 1e-12)) << i;
}
