// Gradients through associative scans on vulkan (part of the test_vulkan_scan binary): forward
// mode's pair scan, reverse mode's transposed pair scan and its levels form, against the
// interpreter.
#include <fmt/format.h>

#include "core/instrument/instrument.h"
#include "tests/kalman_elems.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::dispatches_of;
using jxt::Elem;
using jxt::kcompose;
using jxt::kelems;
using jxt::ScopedEnv;
using jxt::vals;

// The forward-mode gradient of a loss over an associative scan: one scan of (element, tangent)
// pairs on the device for both parameters (the tangent leaves batched; blocked at n = 70000), no
// odd/even recursion; the scan is submitted as soon as it is recorded (the rest of the call is
// recorded while it runs), and the call waits for nothing. Reverse mode transposes that pair scan
// into one reverse associative scan (no odd/even recursion either): under twice forward mode's
// dispatches. Values of both against reverse mode on the cpu.
TEST(VulkanAssociativeScan, ForwardModeGradientIsOneBatchedPairScanSubmittedEarly) {
  for (int n : {100, 70000}) {
    auto loss = [n](const Array& th) {
      Elem e = kelems(n, th.dtype());
      Array A = std::get<0>(e) * np::exp(np::index(th, {std::int64_t{0}})),
            S = std::get<2>(e) * np::exp(np::index(th, {std::int64_t{1}}));
      auto [pA, pb, pS] = lax::associative_scan(kcompose, Elem{A, std::get<1>(e), S});
      return np::mean(np::square(pb)) + np::mean(pS);
    };
    Array th = np::array({-0.05, 0.2}, DType::float32);
    auto [v, g] = value_and_grad(loss)(th);
    DefaultDeviceScope vk("vulkan");
    auto f = jit(value_and_grad(loss, argnums<0>, forward_mode));
    Array tv = device_put(th, "vulkan");
    std::size_t scans = 0;
    for (const Eqn& e : make_jaxpr(value_and_grad(loss, argnums<0>, forward_mode))(th).jaxpr.eqns)
      scans += e.prim == Prim::associative_scan;
    EXPECT_EQ(scans, 1u) << n;  // for both parameters
    (void)f(tv);
    vulkan::synchronize();
    vulkan::reset_counters();
    auto [fv, fg] = f(tv);
    const auto c = vulkan::counters();  // the call itself: nothing waited for
    EXPECT_EQ(c.submits, 1u) << n;      // the scan, submitted as soon as recorded
    EXPECT_EQ(c.host_waits, 0u) << n;
    EXPECT_NEAR(fv.item<double>(), v.item<double>(), 1e-4 * std::abs(v.item<double>())) << n;
    EXPECT_TRUE(all_close(fg, vals(g), 1e-3, 1e-3)) << n;
    auto r = jit(value_and_grad(loss));
    const std::uint64_t reverse = dispatches_of([&] { (void)r(tv); });
    EXPECT_LT(reverse, 2 * c.dispatches) << n;
    auto [rv, rg] = r(tv);
    EXPECT_NEAR(rv.item<double>(), v.item<double>(), 1e-4 * std::abs(v.item<double>())) << n;
    EXPECT_TRUE(all_close(rg, vals(g), 1e-3, 1e-3)) << n;
  }
}

// Reverse mode's levels form (core/transform/assoc_transpose.cc: assoc_grad_form): a few levels of
// the odd/even recursion, differentiated, around the pair scan of the rest. Forced, and chosen
// where positions × floats per position reach JX_ASSOC_GRAD_MIN_WORK: the same value and
// gradient as the pair scan's and the interpreter's, forward and reversed, with 0, 1, 3 and 5
// levels (0: the pair scan over every position, by another route), and the depth chosen by the
// work left to the inner pair scan; 1001 positions give odd and even lengths on the way down
// (1001, 500, 250, 125, 62); fewer dispatches than the whole recursion, more than the pair scan
// alone. (Each length compiles its own shaders: one length.)
TEST(VulkanAssociativeScan, ReverseModeLevelsFormMatchesThePairScan) {
  {
    const int n = 1001;
    for (bool rev : {false, true}) {
      auto loss = [n, rev](const Array& th) {
        Elem e = kelems(n, th.dtype());
        Array A = std::get<0>(e) * np::exp(np::index(th, {std::int64_t{0}})),
              S = std::get<2>(e) * np::exp(np::index(th, {std::int64_t{1}}));
        auto r = lax::associative_scan_flat(
            [](const std::vector<Array>& a, const std::vector<Array>& b) {
              auto [c0, c1, c2] = kcompose({a[0], a[1], a[2]}, {b[0], b[1], b[2]});
              return std::vector<Array>{c0, c1, c2};
            },
            {A, std::get<1>(e), S}, rev, 0);
        return np::mean(np::square(r[1])) + np::mean(r[2]) + np::mean(np::sin(r[0]));
      };
      const std::string at = fmt::format("n {} reverse {}", n, rev);
      Array th = np::array({-0.05, 0.2}, DType::float64);
      const auto want = value_and_grad(loss)(th);  // the interpreter (no structured binding: lambdas read it)
      const Array v = std::get<0>(want), g = std::get<1>(want);
      DefaultDeviceScope vk("vulkan");
      Array tv = device_put(th, "vulkan");
      auto run = [&](const char* form, const char* levels, const char* min_work) {
        ScopedEnv f("JX_ASSOC_GRAD", form), l("JX_ASSOC_GRAD_LEVELS", levels), w("JX_ASSOC_GRAD_MIN_WORK", min_work);
        auto r = jit(value_and_grad(loss));
        const std::uint64_t d = dispatches_of([&] { (void)r(tv); });
        auto [rv, rg] = r(tv);
        EXPECT_NEAR(rv.item<double>(), v.item<double>(), 1e-10 * std::abs(v.item<double>())) << at << " " << form;
        EXPECT_TRUE(all_close(rg, vals(g), 1e-9, 1e-9)) << at << " " << form << " " << (levels ? levels : "");
        return d;
      };
      const std::uint64_t pairs = run("pairs", nullptr, nullptr), whole = run("recursion", nullptr, nullptr);
      const std::uint64_t chosen = run(nullptr, "3", "1"), levels3 = run("levels", "3", nullptr);
      EXPECT_EQ(chosen, levels3) << at;  // n × 10 floats ≥ 1: chosen
      {  // the depth chosen: the fewest levels leaving ≤ 1300 of the 10010 (5005, 2503, 1252): 3
        ScopedEnv inner("JX_ASSOC_GRAD_INNER_WORK", "1300");
        EXPECT_EQ(run(nullptr, nullptr, "1"), levels3) << at;
      }
      EXPECT_EQ(run(nullptr, nullptr, "1"), run("levels", "1", nullptr)) << at;  // 5005 ≤ 2^20: one level
      EXPECT_EQ(run(nullptr, "3", "100000"), pairs) << at;                       // below: the pair scan
      EXPECT_GT(levels3, pairs) << at;
      EXPECT_LT(levels3, whole) << at;
      if (n % 2 == 1 && rev)
        for (const char* l : {"0", "1", "5"}) (void)run("levels", l, nullptr);
    }
  }
  ScopedEnv bad("JX_ASSOC_GRAD", "tree");
  DefaultDeviceScope vk("vulkan");
  auto loss = [](const Array& th) {
    auto r = lax::associative_scan_flat(
        [](const std::vector<Array>& a, const std::vector<Array>& b) { return std::vector<Array>{a[0] * b[0]}; }, {th},
        false, 0);
    return np::sum(r[0]);
  };
  EXPECT_THROW(
      {
        try {
          (void)jit(grad(loss))(device_put(np::array({0.5, 0.7}, DType::float64), "vulkan"));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("JX_ASSOC_GRAD=tree: expected pairs, levels, recursion or fold"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}
