// The vulkan backend against the cpu oracle (ggml test-backend-ops style) on random inputs, plus
// the WebGPU limits profile, counters, memory and the documented 3-tuple associative-scan loss
// (the shapes of reductions: test_vulkan_reductions.cc, in the same binary).
// In ctest: each test on its own, and the whole binary once more with JX_VULKAN_VALIDATION=1
// (validation.test_vulkan), where any validation message fails the test that produced it.
#include <chrono>

#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/base/env.h"
#include "core/instrument/instrument.h"
#include "core/jit/program.h"
#include "tests/prim_cases.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::on;
using jxt::vals;

namespace {

double tol_of(DType d) { return d == DType::float64 ? 1e-12 : 2e-5; }

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

class VulkanEveryCase : public ::testing::TestWithParam<jxt::Case> {};

TEST_P(VulkanEveryCase, EagerAndJitMatchCpu) {
  const auto& c = GetParam();
  auto f = jit([fn = c.f](const std::vector<Array>& in) { return fn(in); });
  for (DType d : {DType::float64, DType::float32}) {
    std::vector<Array> x;
    for (auto& a : jxt::random_inputs(c, 41)) x.push_back(np::astype(a, d));
    Array want = c.f(x);  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    Array eager = c.f(on(x, "vulkan"));
    Array jitted = f(on(x, "vulkan"));
    EXPECT_EQ(eager.backend().info().backend, "vulkan");
    EXPECT_EQ(jitted.aval(), want.aval());
    EXPECT_TRUE(all_close(eager, vals(want), tol_of(d), tol_of(d))) << c.name << " eager " << dtype_name(d);
    EXPECT_TRUE(all_close(jitted, vals(want), tol_of(d), tol_of(d))) << c.name << " jit " << dtype_name(d);
  }
}

class VulkanDifferentiable : public ::testing::TestWithParam<jxt::Case> {};

TEST_P(VulkanDifferentiable, JitOfVjpMatchesCpu) {
  const auto& c = GetParam();
  auto pull = jit([fn = c.f](const std::vector<Array>& in) {
    auto [y, lin] = vjp_flat([&](const std::vector<Array>& a) { return std::vector<Array>{fn(a)}; }, in);
    return lin.transpose({np::ones_like(y[0])});
  });
  auto x = jxt::random_inputs(c, 42);
  auto want = pull(x);
  DefaultDeviceScope vk("vulkan");
  auto got = pull(on(x, "vulkan"));
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(all_close(got[i], vals(want[i]), 1e-11, 1e-11)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(All, VulkanEveryCase, ::testing::ValuesIn(jxt::cases()),
                         [](const auto& info) { return info.param.name; });
std::vector<jxt::Case> differentiable_cases() {
  std::vector<jxt::Case> r;
  for (const auto& c : jxt::cases())
    if (c.differentiable) r.push_back(c);
  return r;
}
INSTANTIATE_TEST_SUITE_P(All, VulkanDifferentiable, ::testing::ValuesIn(differentiable_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Vulkan, DeviceLimitsProfileAndErrors) {
  const auto& info = backend("vulkan").info();
  ASSERT_TRUE(info.available) << info.reason;
  EXPECT_EQ(vulkan::limits(), "webgpu");
  EXPECT_EQ(info.limits.max_buffers_per_kernel, 8);
  EXPECT_FALSE(vulkan::describe_devices().empty());
  // a kernel binding 13 buffers, lowered without a budget, cannot become a WebGPU pipeline
  auto f = [](const std::vector<Array>& xs) {
    Array acc = xs[0] * xs[1];
    for (std::size_t i = 2; i < xs.size(); ++i) acc = acc * 0.5 + xs[i];
    return std::vector<Array>{acc};
  };
  std::vector<AVal> avals(12, AVal{DType::float32, {4}});
  Program p = lower(make_jaxpr_flat(f, avals).jaxpr, LowerOptions{0});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(jxt::throws_with<BackendError>([&] { backend("vulkan").prepare_kernel(p.kernels[0]); },
                                             {"Too many buffers (13) for WebGPU pipeline (max: 8)"}));
  vulkan::set_limits("device");
  EXPECT_GT(backend("vulkan").info().limits.max_buffers_per_kernel, 8);
  EXPECT_NO_THROW(backend("vulkan").prepare_kernel(p.kernels[0]));
  vulkan::set_limits("webgpu");
  EXPECT_TRUE(jxt::throws_with<BackendError>([] { vulkan::set_limits("webgl"); }, {"unknown limits profile 'webgl'"}));
  // operands on different backends are named
  EXPECT_TRUE(jxt::throws_with<BackendError>(
      [] { (void)(device_put(np::ones({2}), "vulkan") + device_put(np::ones({2}), "cpu")); }, {"different backends"}));
}

TEST(Vulkan, DispatchesAreBatchedIntoOneSubmitAndTheHostWaitsOnlyToRead) {
  DefaultDeviceScope vk("vulkan");
  Array x = np::ones({1000}, DType::float32);
  vulkan::synchronize();
  vulkan::reset_counters();
  Array y = x;
  for (int i = 0; i < 10; ++i) y = y * 1.5 + 1.0;  // 20 eager ops, each reading the last (+ scalar operands)
  auto c0 = vulkan::counters();
  EXPECT_GE(c0.dispatches, 20u);
  EXPECT_EQ(c0.submits, 0u);
  EXPECT_EQ(c0.host_waits, 0u);
  double want = 1.0;
  for (int i = 0; i < 10; ++i) want = want * 1.5 + 1.0;
  EXPECT_NEAR(y.to_vector<double>()[999], want, 1e-3 * want);
  auto c1 = vulkan::counters();
  EXPECT_EQ(c1.submits, 1u);
  EXPECT_EQ(c1.host_waits, 1u);
  EXPECT_GE(c1.barriers, 19u);  // every op reads the previous one's output
  EXPECT_LT(c1.barriers, c1.dispatches);
  EXPECT_EQ(c1.bytes_downloaded, 4000u);
  EXPECT_LE(c1.max_buffers_per_dispatch, 8u);
}

TEST(Vulkan, LongRecordingsAreSubmittedInChunksWithoutWaiting) {
  // JX_VK_SUBMIT_EVERY (default 64): the device starts on the first commands of a long call while
  // the host records the rest; the host still waits once, to read
  DefaultDeviceScope vk("vulkan");
  Array x = np::ones({1000}, DType::float32);
  vulkan::synchronize();
  vulkan::reset_counters();
  Array y = x;
  for (int i = 0; i < 100; ++i) y = y * 0.5 + 1.0;  // converges to 2
  auto c0 = vulkan::counters();
  const std::uint64_t commands = c0.dispatches + c0.copies;
  EXPECT_GE(c0.dispatches, 200u);
  EXPECT_EQ(c0.submits, (commands - 1) / 64);  // a batch goes once it holds 64 commands
  EXPECT_EQ(c0.host_waits, 0u);
  EXPECT_NEAR(y.to_vector<double>()[0], 2.0, 1e-6);
  auto c1 = vulkan::counters();
  EXPECT_EQ(c1.submits, c0.submits + 1);
  EXPECT_EQ(c1.host_waits, 1u);
  EXPECT_GE(c1.barriers, 199u);  // the chain stays ordered across submits
}

// A stream longer than one batch's descriptor pool is submitted in parts; the first reader in a
// later part still waits on the writes of the part before (a barrier's first scope is every
// earlier command in submission order, so the tracking of written buffers outlives the submit).
TEST(Vulkan, ABarrierOrdersReadsAfterAMidStreamSubmit) {
  DefaultDeviceScope vk("vulkan");
  Array x = np::ones({64}, DType::float32);
  vulkan::synchronize();
  vulkan::reset_counters();
  Array y = x;
  // dependent dispatches over fresh buffers: more descriptor sets than the cached pool and one
  // batch's pool hold (4096 + 512)
  constexpr int n = 5000;
  for (int i = 0; i < n; ++i) y = y + x;
  auto c0 = vulkan::counters();
  EXPECT_EQ(c0.dispatches, static_cast<std::uint64_t>(n));
  EXPECT_GE(c0.submits, 1u);  // the stream did not fit one batch
  EXPECT_EQ(c0.barriers, static_cast<std::uint64_t>(n - 1))
      << "every op reads the previous one's output, across the submit too";
  EXPECT_EQ(y.to_vector<float>()[63], static_cast<float>(n + 1));
}

// A jit program's kernels over its pooled buffers bind the same descriptor sets call after call:
// once the buffers a call gets from the pool repeat, a call writes none, and its results stay right.
TEST(Vulkan, RepeatedJitCallsReuseTheirDescriptorSets) {
  DefaultDeviceScope vk("vulkan");
  auto f = jit([](const Array& a, const Array& b) {
    return np::sum(np::exp(a) * b, std::vector<std::int64_t>{1}) + np::max(a);
  });
  Array a = np::reshape(np::arange(0, 12, 1, DType::float32), {3, 4}) * 0.1, b = np::ones({3, 4}, DType::float32);
  const auto first = f(a, b).to_vector<double>();
  for (int i = 0; i < 2; ++i) (void)f(a, b).to_vector<double>();  // the pool's buffers settle into their rotation
  vulkan::reset_counters();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f(a, b).to_vector<double>(), first);
  const auto c = vulkan::counters();
  EXPECT_GT(c.dispatches, 0u);
  EXPECT_EQ(c.descriptor_sets, 0u);
}

// Intermediates of one size class released in another order than taken: the pool hands a call its
// buffers oldest first, so every call gets the same ones (released last-in first-out they rotate
// from call to call, and each call wrote a descriptor set per dispatch again).
TEST(Vulkan, ReleaseOrderDoesNotRotateAJitProgramsBuffers) {
  DefaultDeviceScope vk("vulkan");
  auto f = jit([](const Array& a) {
    // eight sums of 32 terms, then a pairwise tree of sums over two of them: every kernel binds
    // two intermediates, and the leaves are released before the inner nodes that were taken later
    auto pair = [&](const Array& x, const Array& y) {
      return np::sum(np::reshape(x * y, {4, 1}) * a, std::vector<std::int64_t>{1}) * 0.01;
    };
    std::vector<Array> r;
    for (int i = 1; i <= 8; ++i) r.push_back(np::sum(np::exp(a * (0.1 * i)), std::vector<std::int64_t>{1}));
    while (r.size() > 1) {
      std::vector<Array> up;
      for (std::size_t i = 0; i < r.size(); i += 2) up.push_back(pair(r[i], r[i + 1]));
      r = up;
    }
    return r[0];
  });
  Array a = np::reshape(np::arange(0, 128, 1, DType::float32), {4, 32}) * 0.01;  // sums of 32 terms: one kernel each
  const auto first = f(a).to_vector<double>();
  vulkan::reset_counters();
  (void)f(a).to_vector<double>();
  // 15 kernels; the independent ones of each level of the tree share dispatches (kernel groups)
  const std::uint64_t per_call = vulkan::counters().dispatches;
  EXPECT_GE(per_call, 4u);  // the 8 sums, then the tree's 3 levels
  EXPECT_LE(per_call, 15u);
  vulkan::reset_counters();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f(a).to_vector<double>(), first);
  const auto c = vulkan::counters();
  EXPECT_EQ(c.dispatches, 4u * per_call);
  EXPECT_EQ(c.descriptor_sets, 0u);
}

// A fori_loop whose body holds an associative scan runs as a host loop of the compiled body (no
// loop shader nests an associative scan), with no host wait between steps. Each step takes the
// buffers that submitted steps released (stream-ordered reuse: the queue runs commands in order
// and the barriers order a new write after the old reads), so the buffers a call allocates do not
// grow with its steps; before, a released buffer waited for the next host wait, and a 30-step
// loop allocated 271 buffers from an empty pool and a 10-step one 91 (now 16 and 16). Results are
// the cpu oracle's. The scan in the body is not submitted early (as a call's own scan is).
TEST(Vulkan, AHostLoopReusesReleasedBuffersWithoutWaiting) {
  auto loop = [](int steps) {
    return [steps](const Array& x) {
      return lax::fori_loop(
          0, steps,
          [](const Array&, const Array& c) {
            auto [a, b, d] = lax::associative_scan(compose, Triple{np::tanh(c) * 0.5, c * 0.25, c * 0.125});
            return np::tanh(a + b + d);
          },
          x);
    };
  };
  std::vector<double> want;
  {
    DefaultDeviceScope cpu("cpu");
    want = jit(loop(30))(np::arange(0, 64, 1, DType::float32) * 0.01).to_vector<double>();
  }
  DefaultDeviceScope vk("vulkan");
  Array x = np::arange(0, 64, 1, DType::float32) * 0.01;
  auto created_cold = [&](int steps) {  // buffers a call allocates from an empty pool
    auto f = jit(loop(steps));
    (void)f(x).to_vector<double>();    // compiles
    backend("vulkan").clear_caches();  // empties the pool (pipelines come back from the SPIR-V cache)
    vulkan::reset_counters();
    Array y = f(x);
    const auto c = vulkan::counters();
    EXPECT_EQ(c.host_waits, 0u) << "the loop's steps never wait for the device";
    EXPECT_GE(c.dispatches, static_cast<std::uint64_t>(steps));
    // a batch goes when full (64 commands), not after each step's scan (a submit per scan per
    // step cost more host time than it saved)
    EXPECT_LT(c.submits, static_cast<std::uint64_t>(steps) / 2) << c.dispatches << " dispatches";
    if (steps == 30) {
      EXPECT_TRUE(all_close(y, want, 1e-5, 1e-5));
    }
    return c.buffers_created;
  };
  const std::uint64_t short_loop = created_cold(10), long_loop = created_cold(30);
  EXPECT_LE(long_loop, short_loop + 2) << "20 more steps, " << (long_loop - short_loop) << " more buffers";
}

// A released buffer that submitted work may still read is never written by the host: a slot
// given it and then written from the host gets a fresh buffer instead (no host wait), so neither
// the pending computation nor the new array sees the other's values.
TEST(Vulkan, TheHostNeverWritesABufferSubmittedWorkMayStillRead) {
  DefaultDeviceScope vk("vulkan");
  constexpr std::int64_t n = 1 << 16;
  vulkan::synchronize();
  vulkan::reset_counters();
  Array r;
  {
    Array a = np::arange(0, n, 1, DType::float32);
    for (int i = 0; i < 8; ++i) a = np::sin(a) + a;  // work that still reads a's buffers
    r = np::sum(a * 0.0) + np::max(a * 0.0);
    backend("vulkan").flush();  // submitted, not waited for
  }                             // a's buffers released while the work may run
  const std::vector<float> host(n, 7.0f);
  Array b = np::array(host);  // a host write into a slot of the same size class
  EXPECT_EQ(vulkan::counters().host_waits, 0u) << "the host write took a fresh buffer, not a wait";
  EXPECT_EQ(r.item<double>(), 0.0);
  EXPECT_EQ(np::sum(b).item<double>(), 7.0 * n);
}

// A compiled call submits early at its first associative scan only (JX_EARLY_SUBMIT=first): the
// device starts on it while the rest is recorded, and the later scans go with the final batch
// (each submit costs the device a gap between batches). Two submits a call, whatever the timing.
TEST(Vulkan, OnlyACallsFirstAssociativeScanSubmitsEarly) {
  DefaultDeviceScope vk("vulkan");
  auto add = [](const Array& a, const Array& b) { return a + b; };
  auto body = [&](const Array& x) {
    Array y = lax::associative_scan(add, np::sin(x));  // values up to ~1880: well conditioned below
    Array z =
        lax::associative_scan([](const Array& a, const Array& b) { return np::maximum(a, b); }, np::cos(y * 1e-3));
    return lax::associative_scan(add, z * 0.5);
  };
  auto f = jit(body);
  const Array x = np::linspace(0.0, 1.0, 4096, true, DType::float32);
  (void)np::sum(f(x)).item<double>();  // compiled once before counting
  vulkan::synchronize();
  vulkan::reset_counters();
  const double got = np::sum(f(x)).item<double>();
  EXPECT_EQ(vulkan::counters().submits, 2u) << "the first scan's early submit, then the rest at the read";
  EXPECT_EQ(vulkan::counters().host_waits, 1u);
  double want = 0.0;
  {
    DefaultDeviceScope cpu("cpu");
    want = np::sum(body(np::linspace(0.0, 1.0, 4096, true, DType::float32))).item<double>();
  }
  EXPECT_NEAR(got, want, 1e-3 * std::abs(want));
}

// JX_VK_PIPELINE_STATS=1 at start (ctest vulkan.pipeline_stats; the GPU record's validation run
// of this binary): where the driver has VK_KHR_pipeline_executable_properties, every timed
// pipeline's name ends in its statistics ("{Register Count 32, ...}" on NVIDIA); where it has not,
// or without the variable, none does.
TEST(Vulkan, PipelineStatisticsWhereAskedAndAvailable) {
  DefaultDeviceScope vk("vulkan");
  const bool asked = env_is_on("JX_VK_PIPELINE_STATS");
  EXPECT_TRUE(asked || !vulkan::pipeline_statistics());
  vulkan::set_timing(true);
  vulkan::reset_timings();
  auto f = jit([](const Array& x) { return np::sum(np::sin(x) * 2.0f); });
  const Array x = np::linspace(0.0, 1.0, 4096, true, DType::float32);
  EXPECT_NEAR(f(x).item<double>(), 2.0 * 4096 * (1.0 - std::cos(1.0)), 1.0);
  const auto timed = vulkan::timings();
  vulkan::set_timing(false);
  ASSERT_FALSE(timed.empty()) << "lavapipe and NVIDIA have timestamps on the compute queue";
  int pipelines = 0;
  for (const auto& t : timed) {
    if (t.name.starts_with("(")) continue;  // the idle between batches: no pipeline
    ++pipelines;
    const auto open = t.name.find(" {");
    const bool stats = open != std::string::npos && t.name.back() == '}' &&
                       t.name.find_first_of("0123456789", open) != std::string::npos;
    EXPECT_EQ(stats, vulkan::pipeline_statistics()) << t.name;
  }
  EXPECT_GT(pipelines, 0);
}

TEST(Vulkan, JitProgramsStayWithinTheWebGpuBudget) {
  DefaultDeviceScope vk("vulkan");
  std::vector<Array> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(np::full({64}, i + 1.0, DType::float32));
  auto f = jit([](const std::vector<Array>& a) {
    Array acc = a[0] * a[1];
    for (std::size_t i = 2; i < a.size(); ++i) acc = acc * 0.5 + a[i];
    return acc;
  });
  trace::DispatchTracker t;
  Array got = f(xs);
  EXPECT_LE(t.max_buffers(), 8);
  EXPECT_GT(t.dispatches(), 1u);
  double want = 1.0 * 2.0;
  for (int i = 2; i < 12; ++i) want = want * 0.5 + (i + 1.0);
  EXPECT_TRUE(all_close(got, std::vector<double>(64, want), 1e-6, 1e-6));
}

// Kernels that do not read each other's outputs run as one dispatch (core/jit/kernel_groups.h),
// whatever their sizes and dtypes (a bool output packs bytes with atomics, a short reduction
// loops per invocation), as many as the budget's bindings allow.
TEST(Vulkan, IndependentKernelsShareADispatchWithinTheBudget) {
  auto outputs = [](const std::vector<Array>& a) {
    const Array &x = a[0], &y = a[1], &i = a[2];
    return std::vector<Array>{np::exp(x) * 2.0,    np::greater(x, np::zeros_like(x)),
                              y * y + 1.0,         i + np::ones_like(i),
                              np::sum(np::sin(x)), np::cos(y) - y};
  };
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  auto normal = [&](std::int64_t n, DType d) {
    std::vector<double> v(n);
    for (double& e : v) e = nd(rng);
    return np::astype(np::array(v), d);
  };
  const std::vector<Array> in{normal(300, DType::float32), normal(5, DType::float64),
                              np::array({1.0, -2.0, 3.0, 2147483646.0, 0.0, 5.0, -7.0}, DType::int32)};
  const std::vector<Array> want = outputs(in);  // the cpu oracle, op by op
  DefaultDeviceScope vk("vulkan");
  for (int budget : {0, 8}) {  // 0: the backend's (8 under the webgpu profile: 3 inputs + 5 outputs)
    auto f = jit(outputs, {.name = fmt::format("groups{}", budget), .max_buffers = budget});
    trace::DispatchTracker t;
    const std::vector<Array> got = f(on(in, "vulkan"));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(all_close(got[k], vals(want[k]), 1e-6, 1e-6)) << "output " << k;
    const int device = backend("vulkan").info().limits.max_buffers_per_kernel;
    const int bindings = budget > 0 ? std::min(budget, device) : device;
    EXPECT_LE(t.max_buffers(), bindings);
    // 3 inputs and 6 outputs: one dispatch where 9 bindings fit, two under 8
    EXPECT_EQ(t.dispatches(), bindings >= 9 ? 1u : 2u) << bindings;
  }
}

TEST(Vulkan, TripleComposeAssociativeScanUnderJitValueAndGrad) {
  DefaultDeviceScope vk("vulkan");
  trace::DispatchTracker t;
  auto [v, g] = jit(value_and_grad(triple_loss))(np::array({0.5}, DType::float64));
  EXPECT_EQ(v.backend().info().backend, "vulkan");
  EXPECT_NEAR(v.item<double>(), 284451.7727106761, 1e-7);
  EXPECT_NEAR(g.item<double>(), 4813870.5205, 1e-3);
  EXPECT_LE(t.max_buffers(), 8);
  auto [v32, g32] = jit(value_and_grad(triple_loss))(np::array({0.5}, DType::float32));
  EXPECT_NEAR(v32.item<double>(), 284451.6875, 1.0);
  EXPECT_NEAR(g32.item<double>(), 4813868.5, 16.0);
}

TEST(Vulkan, BoolAndIntegerBuffersAndIsnanOnAColumn) {
  DefaultDeviceScope vk("vulkan");
  // the documented report: isnan on a [4,1] array on the GPU gives [0,1,0,1]
  Array x = np::reshape(np::array({1.0, NAN, 2.0, NAN}, DType::float32), {4, 1});
  EXPECT_TRUE(all_close(np::astype(np::isnan(x), DType::int32), {0, 1, 0, 1}));
  Array b = np::array({1.0, 0.0, 1.0, 1.0, 0.0}, DType::bool_);  // five bytes: packed into two words
  EXPECT_TRUE(all_close(np::astype(np::logical_not(b), DType::int32), {0, 1, 0, 0, 1}));
  Array i = np::array({2147483647.0, -5.0, 7.0}, DType::int32);
  EXPECT_TRUE(all_close(i + np::array({1.0, 2.0, 3.0}, DType::int32), {-2147483648.0, -3, 10}));
  EXPECT_TRUE(all_close(np::argmax(np::array({{1.0, 5.0, 5.0}, {NAN, 0.0, 9.0}}), 1), {1, 0}));
}

// A select whose branches read memory the other does not (the windows of concatenate and pad)
// computes only the branch taken where its condition is the same across a warp (cstyle.cc: an
// if / else, each branch's own nodes inside; glsl_uniform.cc): the values against the cpu oracle
// with windows that would be NaN or out of range where discarded, nested windows, int32 and bool,
// windows across rows of 16 and of 64; and which selects become an if / else.
TEST(Vulkan, SelectsComputeOnlyTheBranchTaken) {
  const Array x = np::arange(-20.0, 20.0, 0.01, DType::float32), y = np::exp(x * 0.1);
  using F = std::function<Array(const std::vector<Array>&)>;
  auto half = [](const Array& a, std::int64_t h) { return np::index(a, {np::Slice{h * 2000, (h + 1) * 2000}}); };
  // rows of w: the left half of each row from one window, the right half from another, so the
  // select's condition (column < w / 2) alternates every w / 2 outputs
  auto row_windows = [](const std::vector<Array>& v, std::int64_t w) {
    auto rows = [&](const Array& x) { return np::reshape(np::index(x, {np::Slice{0, 3840}}), {-1, w}); };
    const Array a = rows(v[0]), b = rows(v[1]);
    auto cols = [&](const Array& m, std::int64_t h) {
      return np::index(m, {np::Slice{}, np::Slice{h * w / 2, (h + 1) * w / 2}});
    };
    return np::concatenate({np::log(cols(a, 1)) * cols(b, 0), np::sqrt(-cols(a, 0)) + cols(b, 1)}, 1);
  };
  const std::vector<std::pair<const char*, F>> cases = {
      {"two windows",
       [&](const std::vector<Array>& v) {
         return np::concatenate({np::log(half(v[0], 1)) * half(v[1], 0), np::sqrt(-half(v[0], 0)) + half(v[1], 1)});
       }},
      {"nested windows",
       [&](const std::vector<Array>& v) {
         return np::pad(np::concatenate({half(v[0], 0) * half(v[1], 1), np::pad(half(v[1], 0), {{3, 5}})}), {{7, 2}},
                        1.5);
       }},
      {"int32",
       [&](const std::vector<Array>& v) {
         return np::concatenate(
             {np::astype(half(v[0], 0) * 10.0, DType::int32), np::astype(half(v[1], 1), DType::int32)});
       }},
      {"bool",
       [&](const std::vector<Array>& v) {
         return np::concatenate({np::greater(half(v[0], 1), half(v[1], 0)), np::isnan(np::log(half(v[0], 0)))});
       }},
      {"where over loads",
       [&](const std::vector<Array>& v) {
         return np::where(np::greater(v[0], np::full({}, 0.0)), np::log(v[0]) * v[1], v[1] - 1.0);
       }},
      {"windows across rows of 16", [&](const std::vector<Array>& v) { return row_windows(v, 16); }},
      {"windows across rows of 64", [&](const std::vector<Array>& v) { return row_windows(v, 64); }},
  };
  for (const auto& [what, f] : cases) {
    const std::vector<double> want = vals(f({x, y}));  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    EXPECT_TRUE(all_close(jit(f)(on({x, y}, "vulkan")), want, 1e-6, 1e-6)) << what;
  }
  // the rendered kernel: an if / else for the windows, a ternary for a select of two cheap values
  auto glsl = [&](const F& f) {
    ClosedJaxpr cj = make_jaxpr(f)(std::vector<Array>{x, y});
    Program p = lower(cj.jaxpr, LowerOptions{});
    std::string s;
    for (const Kernel& k : p.kernels) s += vk::render_kernel(k, false).glsl;
    return s;
  };
  EXPECT_NE(glsl(cases[0].second).find("} else {"), std::string::npos);
  // a warp of 32 holds two rows of 16 and takes both branches: one expression; rows of 64 split
  // at 32, so every warp takes one branch
  EXPECT_EQ(glsl(cases[5].second).find("} else {"), std::string::npos);
  EXPECT_NE(glsl(cases[6].second).find("} else {"), std::string::npos);
  // a condition read from memory: its split across warps is not known, both branches
  EXPECT_EQ(glsl(cases[4].second).find("} else {"), std::string::npos);
  const std::string cheap = glsl([](const std::vector<Array>& v) {
    return np::where(np::greater(v[0], np::full({}, 0.0)), v[0] * 2.0, v[0] + 1.0);
  });
  EXPECT_EQ(cheap.find("} else {"), std::string::npos) << cheap;
}

TEST(Vulkan, MemoryIsPooledAndReported) {
  DefaultDeviceScope vk("vulkan");
  const auto before = backend("vulkan").memory();
  {
    Array a = np::ones({1 << 15}, DType::float32) * 2.0;
    EXPECT_NEAR(np::sum(a).item<double>(), 65536.0, 1e-3);
    EXPECT_GT(backend("vulkan").memory().live_bytes, before.live_bytes);
  }
  vulkan::synchronize();
  const auto after = backend("vulkan").memory();
  EXPECT_EQ(after.live_slots, before.live_slots);
  EXPECT_GT(after.pooled_bytes, 0u);
  EXPECT_GT(after.pipelines, 0u);
  const auto ms = memory_stats();
  EXPECT_GE(ms.pipelines, after.pipelines);
}

// Host time of the recording, split, while timing is on; nothing is timed (or counted) when off.
TEST(Vulkan, HostTimersSplitTheRecordingOnlyWhileTimingIsOn) {
  DefaultDeviceScope vk("vulkan");
  auto f = jit([](const Array& a) { return np::sum(np::exp(a) * a, std::vector<std::int64_t>{1}); });
  Array a = np::reshape(np::arange(0, 128, 1, DType::float32), {4, 32}) * 0.01;
  (void)f(a).to_vector<double>();
  auto run = [&] {
    vulkan::reset_counters();
    for (int i = 0; i < 5; ++i) (void)f(a).to_vector<double>();
    return vulkan::counters();
  };
  const auto off = run();
  EXPECT_GT(off.dispatches, 0u);
  EXPECT_EQ(off.host_dispatch_ns + off.host_driver_ns + off.host_submit_ns + off.host_alloc_ns, 0u);
  vulkan::set_timing(true);
  const auto t0 = std::chrono::steady_clock::now();
  const auto on = run();
  const auto wall_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  vulkan::set_timing(false);
  EXPECT_GT(on.host_dispatch_ns, 0u);
  EXPECT_GT(on.host_driver_ns, 0u);  // vkCmd* of every dispatch
  EXPECT_GT(on.host_submit_ns, 0u);  // each read submits
  EXPECT_GT(on.host_alloc_ns, 0u);
  EXPECT_LT(on.host_dispatch_ns + on.host_alloc_ns, wall_ns);  // disjoint scopes of the calls timed
}
