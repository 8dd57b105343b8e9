#include <bit>
#include "core/instrument/instrument.h"
#include "core/jit/passes.h"
#include "core/jit/program.h"
#include "core/kernel/index_eval.h"
#include "leakcheck/leakcheck.h"
#include "tests/prim_cases.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
Array f64(std::initializer_list<np::Nested> v) { return np::array(v, DType::float64); }
}  // namespace

class JitEveryCase : public ::testing::TestWithParam<jxt::Case> {};

TEST_P(JitEveryCase, JitEqualsEager) {
  const auto& c = GetParam();
  auto x = jxt::random_inputs(c, 21);
  Array want = c.f(x);
  auto jf = jit([f = c.f](const std::vector<Array>& in) { return f(in); });
  Array got = jf(x);
  EXPECT_EQ(got.aval(), want.aval());
  EXPECT_TRUE(all_close(got, vals(want), 1e-13, 1e-13)) << c.name;
  // float32 inputs too
  std::vector<Array> x32;
  for (auto& a : x) x32.push_back(np::astype(a, DType::float32));
  Array w32 = c.f(x32);
  EXPECT_TRUE(all_close(jf(x32), vals(w32), 2e-5, 2e-5)) << c.name;
}

TEST_P(JitEveryCase, JitOfVjpEqualsEager) {
  const auto& c = GetParam();
  auto x = jxt::random_inputs(c, 22);
  auto pull = [f = c.f](const std::vector<Array>& in) {
    auto [y, lin] = vjp_flat([&](const std::vector<Array>& a) { return std::vector<Array>{f(a)}; }, in);
    return lin.transpose({np::ones_like(y[0])});
  };
  auto want = pull(x);
  auto got = jit(pull)(x);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(all_close(got[i], vals(want[i]), 1e-12, 1e-12)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(All, JitEveryCase, ::testing::ValuesIn(jxt::cases()),
                         [](const auto& info) { return info.param.name; });

// CompileOnly: the call traces and compiles (a compile event, the program cached) but
// dispatches nothing, and answers arrays of the traced shapes and dtypes; the real call after it
// compiles nothing and gives the values. A scan's body is compiled with its program. Nested:
// the scope counts, and leaving the inner one keeps the outer.
TEST(Jit, CompileOnlyCompilesWithoutRunning) {
  auto f = jit([](const Array& x, const Array& y) {
    auto [c, ys] = lax::scan(
        [](const Array& c, const Array& xt) {
          return std::pair{c * 0.5 + xt, c * xt};
        },
        np::sum(y), x);
    return std::vector<Array>{c, ys * 2.0};
  });
  Array x = np::arange(0, 12, 1, DType::float32) * 0.25, y = np::ones({3}, DType::float32);
  std::vector<std::string> compiles;
  std::size_t dispatches = 0;
  auto watch = [&](const trace::Event& e) {
    if (e.kind == trace::EventKind::compile && e.name == "jit") compiles.push_back(e.backend);
    if (e.kind == trace::EventKind::dispatch) ++dispatches;
  };
  std::vector<Array> placeholders;
  {
    trace::Subscription sub(watch);
    const CompileOnly outer;
    {
      const CompileOnly inner;
      EXPECT_TRUE(CompileOnly::active());
    }
    EXPECT_TRUE(CompileOnly::active());
    placeholders = f(x, y);
  }
  EXPECT_FALSE(CompileOnly::active());
  EXPECT_EQ(compiles.size(), 1u);
  EXPECT_EQ(dispatches, 0u);
  ASSERT_EQ(placeholders.size(), 2u);
  EXPECT_EQ(placeholders[0].aval().str(), "float32[]");
  EXPECT_EQ(placeholders[1].aval().str(), "float32[12]");
  compiles.clear();
  std::vector<Array> got;
  {
    trace::Subscription sub(watch);
    got = f(x, y);
  }
  EXPECT_TRUE(compiles.empty()) << "the real call compiled again";
  EXPECT_GT(dispatches, 0u);
  double c = 3.0;
  std::vector<double> ys;
  for (int t = 0; t < 12; ++t) {
    ys.push_back(2.0 * c * (0.25 * t));
    c = c * 0.5 + 0.25 * t;
  }
  EXPECT_NEAR(got[0].item<double>(), c, 1e-5);
  EXPECT_TRUE(all_close(got[1], ys, 1e-5, 1e-5));
}

TEST(Fusion, ElementwiseChainIsOneKernel) {
  auto f = jit([](const Array& x) { return np::exp(x) * 2.0 + 1.0; });
  Array x = f64({0.0, 1.0, -1.0});
  (void)f(x);  // compile
  trace::DispatchTracker t;
  Array y = f(x);
  EXPECT_EQ(t.dispatches(), 1u);
  EXPECT_EQ(t.fused_dispatches(), 1u);
  EXPECT_EQ(t.max_buffers(), 2);  // x and the output: constants are folded into the kernel
  EXPECT_TRUE(all_close(y, {3, 2 * std::exp(1.0) + 1, 2 * std::exp(-1.0) + 1}));
}

TEST(Fusion, ReductionWithEpilogueIsOneKernel) {
  auto f = jit([](const Array& x) { return np::sqrt(np::sum(np::exp(x)) * 2.0); });
  Array x = f64({0.0, 1.0, 2.0});
  trace::DispatchTracker t;
  Array y = f(x);
  EXPECT_EQ(t.dispatches(), 1u);
  EXPECT_NEAR(y.item<double>(), std::sqrt(2 * (1 + std::exp(1.0) + std::exp(2.0))), 1e-14);
  trace::DispatchTracker t2;
  Array m = jit([](const Array& a) {
    return np::max(a, std::vector<std::int64_t>{1}) - np::mean(a, std::vector<std::int64_t>{1});
  })(f64({{1.0, 5.0, 3.0}, {-1.0, -2.0, 0.0}}));
  EXPECT_TRUE(all_close(m, {2, 1}, 1e-15));
  EXPECT_LE(t2.dispatches(), 2u);  // max and sum kernels; the mean's divide and the subtraction are epilogue
}

TEST(Fusion, ViewsFuseWithoutCopies) {
  Array x = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  trace::DispatchTracker t;
  Array y = jit([](const Array& a) {
    return np::transpose(a) * 10.0 + np::flip(np::transpose(a), std::vector<std::int64_t>{0});
  })(x);
  EXPECT_EQ(t.dispatches(), 1u);
  EXPECT_TRUE(all_close(y, {13, 46, 22, 55, 31, 64}));
  // reshape of a transposed view is no affine view: its loads index by flat / 3 and flat mod 2
  trace::DispatchTracker t2;
  Array z = jit([](const Array& a) { return np::reshape(np::transpose(a), {6}) + 0.0; })(x);
  EXPECT_EQ(t2.dispatches(), 1u);
  EXPECT_TRUE(all_close(z, {1, 4, 2, 5, 3, 6}));
  Array s = jit([](const Array& a) { return np::index(a, {np::Slice{}, np::Slice{{}, {}, -2}}) * 1.0; })(x);
  EXPECT_TRUE(all_close(s, {3, 1, 6, 4}));
}

namespace {
// jit(f) against f run op by op (every primitive its own program); returns the dispatches of
// one compiled call.
std::size_t jit_matches_eager(const std::function<Array(const std::vector<Array>&)>& f, const std::vector<Array>& xs,
                              JitOptions o = {}, double tol = 1e-13) {
  Array want = f(xs);
  auto jf = jit(f, o);
  (void)jf(xs);  // compile
  trace::DispatchTracker t;
  Array got = jf(xs);
  EXPECT_EQ(got.aval(), want.aval());
  EXPECT_TRUE(all_close(got, vals(want), tol, tol));
  if (o.max_buffers > 0) {
    EXPECT_LE(t.max_buffers(), o.max_buffers);
  }
  return t.dispatches();
}
using Xs = std::vector<Array>;
}  // namespace

TEST(Fusion, ConcatenateAndPadFuseIntoTheirConsumers) {
  Array a = f64({1.0, 2.0, 3.0}), b = f64({-1.0, 5.0});
  // windows of three operands under selects; reads outside a window are clamped and discarded
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({x[0] * 2.0, x[1] + 1.0, x[0]}) * 3.0;
                },
                {a, b}),
            1u);
  EXPECT_EQ(jit_matches_eager([](const Xs& x) { return np::concatenate({np::flip(x[0]), x[1]}) - 1.0; }, {a, b}), 1u);
  // empty operands take no window
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({np::zeros({0}, DType::float64), x[0], np::zeros({0}, DType::float64)}) + 1.0;
                },
                {a}),
            1u);
  // along an inner axis, and pad on two axes at once
  Array m = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(jit_matches_eager([](const Xs& x) { return np::concatenate({x[0], x[0] * x[0]}, 1) + 1.0; }, {m}), 1u);
  EXPECT_EQ(jit_matches_eager([](const Xs& x) { return np::pad(x[0] * 2.0, {{1, 0}, {2, 1}}, 7.0) + 1.0; }, {m}), 1u);
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::pad(np::transpose(x[0]), {{0, 2}, {0, 0}}, -1.0) * 2.0;
                },
                {m}),
            1u);
  // the interleave of an odd/even step: concatenate on a new axis, then reshape (index arithmetic)
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  Array both = np::concatenate({np::expand_dims(x[0] * 2.0, 1), np::expand_dims(np::flip(x[0]), 1)}, 1);
                  return np::reshape(both, {6}) + 1.0;
                },
                {a}),
            1u);
  // bool and int32 windows
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::where(np::concatenate({np::greater(x[0], np::full({3}, 1.5, DType::float64)),
                                                    np::less(x[1], np::zeros({2}, DType::float64))}),
                                   np::ones({5}, DType::float64), np::zeros({5}, DType::float64));
                },
                {a, b}),
            1u);
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::astype(np::concatenate({np::astype(x[0], DType::int32), np::astype(x[1], DType::int32)}),
                                    DType::float64) *
                         2.0;
                },
                {a, b}),
            1u);
  // a window of a pending reduction (9 terms: not unrolled): the reduction is materialized first
  Array w = np::reshape(np::arange(0.0, 18.0, 1.0, DType::float64), {2, 9});
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({np::sum(x[0], std::vector<std::int64_t>{1}), x[1]}) * 2.0;
                },
                {w, b}),
            2u);
  // a sum of 3 terms where small sums unroll (launch-bound backends): it fuses into the window
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({np::sum(x[0], std::vector<std::int64_t>{1}), x[1]}) * 2.0;
                },
                {m, b}),
            default_backend().info().limits.launch_bound ? 1u : 2u);
  // over a budget of 3 buffers: operands materialized, then the concatenate routine's tree
  Array c = f64({4.0}), d = f64({0.5, 0.25});
  EXPECT_GE(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({x[0], x[1], x[2], x[3]}) * 2.0;
                },
                {a, b, c, d}, {.max_buffers = 3}),
            2u);
  EXPECT_GE(jit_matches_eager(
                [](const Xs& x) {
                  return np::concatenate({x[0] + x[0], x[1] * x[1], x[2] - np::index(x[3], {np::Slice{0, 1}})});
                },
                {a, b, c, d}, {.max_buffers = 3}),
            2u);
}

// f lowered with explicit options and run on the default backend; returns its result and the
// kernels of the program.
std::pair<Array, std::size_t> run_lowered(const std::function<Array(const Xs&)>& f, const Xs& xs,
                                          const LowerOptions& o) {
  std::vector<AVal> avals;
  for (const Array& x : xs) avals.push_back(x.aval());
  ClosedJaxpr cj = make_jaxpr_flat([&](const Xs& v) { return Xs{f(v)}; }, avals);
  Target t = Target::for_eager(default_backend());
  t.budget = 0;  // the options' budget is the lowering's own
  CompiledProgram prog(lower(cj.jaxpr, o), t);
  Xs in = xs;
  in.insert(in.end(), cj.consts.begin(), cj.consts.end());
  return {prog.run(in)[0], prog.program().kernels.size()};
}

// Sums of at most 8 terms per output as elementwise code (LowerOptions::unroll_sums, what
// launch-bound backends lower with) keep the reduction's own arithmetic: bit for bit the
// oracle's double accumulation of float32 terms (sign of zero included), or float accumulation in
// the reduction's order where the backend's own reductions accumulate short sums in float
// (LowerOptions::f32_sum_max_terms, vulkan's): bit for bit the default device's eager sums. They
// fuse into their consumers, products of products included.
TEST(Fusion, SmallSumsUnrollWithTheReductionsArithmetic) {
  const DType f = DType::float32;
  LowerOptions unroll;
  unroll.unroll_sums = true;
  // as the default device's own (eager) reductions: in double on cpu, short sums in float on vulkan
  unroll.f32_sum_max_terms = default_backend().info().limits.f32_sum_max_terms;
  // float accumulation would give 0 for 1e8 + 1 - 1e8, and -0 for -0 + -0
  Array t3 = np::array(std::vector<double>{1e8, 1.0, -1e8, 0.5, 0.25, 3.0}, Shape{2, 3}, f);
  Array z2 = np::array(std::vector<double>{-0.0, -0.0, 1.0, -1.0}, Shape{2, 2}, f);
  Array t8 = np::array(jxt::randn(64, 3), Shape{8, 8}, f) * np::array(std::vector<double>{1e7}, Shape{}, f);
  for (const Array& x : {t3, z2, t8})
    for (std::int64_t ax : {0, 1}) {
      auto g = [ax](const Xs& v) { return np::sum(v[0], std::vector<std::int64_t>{ax}) * 1.0; };
      Array want = g(Xs{x});
      auto [got, kernels] = run_lowered(g, {x}, unroll);
      EXPECT_EQ(kernels, 1u);
      auto a = got.to_vector<float>(), b = want.to_vector<float>();
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i]))
            << "axis " << ax << " element " << i << ": " << a[i] << " vs " << b[i];
      }
    }
  // in double: 1e8 + 1 - 1e8 = 1; in float, as vulkan's short reductions: ((0 + 1e8) + 1) + -1e8
  // = 0, and 0.5 + 0.25 + 3 = 3.75 either way
  auto sum1 = [](const Xs& v) { return np::sum(v[0], std::vector<std::int64_t>{1}); };
  LowerOptions in_double = unroll, in_float = unroll;
  in_double.f32_sum_max_terms = 0;
  in_float.f32_sum_max_terms = 64;
  EXPECT_EQ(run_lowered(sum1, {t3}, in_double).first.to_vector<float>(), (std::vector<float>{1.0f, 3.75f}));
  EXPECT_EQ(run_lowered(sum1, {t3}, in_float).first.to_vector<float>(), (std::vector<float>{0.0f, 3.75f}));
  // batched 2x2 products of products, float64 and int32 too: one kernel (float32 products round
  // to float in a kernel, the eager oracle keeps them exact in double)
  Array A = np::array(jxt::randn(32, 11), Shape{8, 2, 2}, f), B = np::array(jxt::randn(32, 12), Shape{8, 2, 2}, f);
  auto chain = [](const Xs& x) { return np::matmul(x[0], np::matmul(x[1], x[0] + 1.0)) - x[1]; };
  auto [c32, k32] = run_lowered(chain, {A, B}, unroll);
  EXPECT_EQ(k32, 1u);
  EXPECT_TRUE(all_close(c32, vals(chain({A, B})), 1e-5, 1e-5));
  Xs AB64 = {np::astype(A, DType::float64), np::astype(B, DType::float64)};
  auto [c64, k64] = run_lowered(chain, AB64, unroll);
  EXPECT_EQ(k64, 1u);
  EXPECT_TRUE(all_close(c64, vals(chain(AB64)), 1e-14, 1e-14));  // a GPU may contract a*b+c into an fma
  Array I = np::astype(A * 10.0, DType::int32);
  auto isum = [](const Xs& x) { return np::sum(np::matmul(x[0], x[0]), std::vector<std::int64_t>{2}); };
  auto [ci, ki] = run_lowered(isum, {I}, unroll);
  EXPECT_EQ(ki, 1u);
  EXPECT_EQ(vals(ci), vals(isum({I})));
  // without the option (CPU backends): a kernel per product
  EXPECT_EQ(run_lowered(chain, AB64, LowerOptions{}).second, 2u);
  // 9 terms stay a reduction kernel
  Array W = np::array(jxt::randn(81, 13), Shape{9, 9}, f);
  EXPECT_EQ(run_lowered([](const Xs& x) { return np::matmul(np::matmul(x[0], x[0]), x[0]); }, {W}, unroll).second, 2u);
}

TEST(Fusion, SmallBatchedMatmulFusesItsElementwiseOperands) {
  Array A = np::array(jxt::randn(32, 5), Shape{8, 2, 2}, DType::float64),
        B = np::array(jxt::randn(32, 6), Shape{8, 2, 2}, DType::float64);
  // (2A)·(B+1) + A: both operands recomputed twice at most, one kernel
  EXPECT_EQ(jit_matches_eager([](const Xs& x) { return np::matmul(x[0] * 2.0, x[1] + 1.0) + x[0]; }, {A, B}), 1u);
  // A·Bᵀ of windows (an odd/even step's shifted operands)
  EXPECT_EQ(jit_matches_eager(
                [](const Xs& x) {
                  Array s = np::concatenate({np::index(x[0], {np::Slice{0, 1}}), np::index(x[1], {np::Slice{0, 7}})});
                  return np::matmul(s, np::swapaxes(x[1], -1, -2));
                },
                {A, B}),
            1u);
  // a wide matmul materializes its elementwise operand (recomputed 16 times otherwise)
  Array W = np::array(jxt::randn(256, 7), Shape{16, 16}, DType::float64);
  EXPECT_EQ(jit_matches_eager([](const Xs& x) { return np::matmul(np::exp(x[0]), x[0]); }, {W}), 2u);
}

TEST(BufferBudget, TwelveInputsUnderBudgetEight) {
  auto f = [](const std::vector<Array>& xs) {
    Array acc = xs[0] * xs[1];
    for (std::size_t i = 2; i < xs.size(); ++i) acc = acc * 0.5 + xs[i];
    return acc;
  };
  std::vector<Array> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(np::full({4}, i + 1.0, DType::float64));
  Array want = f(xs);
  trace::DispatchTracker unlimited;
  Array a = jit(f)(xs);
  if (const int limit = default_backend().info().limits.max_buffers_per_kernel; limit > 0 && limit < 13) {
    EXPECT_LE(unlimited.max_buffers(), limit);  // the backend's own limit (vulkan/webgpu: 8) is the budget
    EXPECT_GT(unlimited.dispatches(), 1u);
  } else {
    EXPECT_EQ(unlimited.dispatches(), 1u);
    EXPECT_EQ(unlimited.max_buffers(), 13);
  }
  trace::DispatchTracker t;
  Array b = jit(f, {.name = "budget8", .max_buffers = 8})(xs);
  EXPECT_LE(t.max_buffers(), 8);
  EXPECT_GE(t.dispatches(), 2u);
  EXPECT_TRUE(all_close(b, vals(want)));
  EXPECT_TRUE(all_close(a, vals(want)));
  EXPECT_THROW(jit([](const Array& c, const Array& x, const Array& y) { return np::where(c, x, y); },
                   {.max_buffers = 3})(np::ones({2}, DType::bool_), np::ones({2}), np::zeros({2})),
               Error);
}

TEST(Cache, FreshClosuresWithTheSameBodyShareOneEntry) {
  clear_caches();
  const auto before = memory_stats();
  Array x = f64({1.0, 2.0});
  for (int i = 0; i < 20; ++i) {
    auto f = jit([](const Array& a) { return np::sin(a) * a; });  // a new closure object each time
    EXPECT_TRUE(all_close(f(x), {std::sin(1.0), 2 * std::sin(2.0)}));
  }
  const auto after = memory_stats();
  EXPECT_EQ(after.jit_cache_entries, before.jit_cache_entries + 1);
  EXPECT_EQ(after.cache_misses, before.cache_misses + 1);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 19);
}

TEST(Cache, LruEvictsAtCapacity) {
  clear_caches();
  const auto cap = cache_capacity();
  set_cache_capacity(2);
  Array x = f64({1.0});
  auto f1 = jit([](const Array& a) { return a + 1.0; });
  auto f2 = jit([](const Array& a) { return a + 2.0; });
  auto f3 = jit([](const Array& a) { return a + 3.0; });
  (void)f1(x);
  (void)f2(x);
  (void)f3(x);
  auto s = memory_stats();
  EXPECT_EQ(s.jit_cache_entries, 2u);
  const auto misses = s.cache_misses;
  EXPECT_DOUBLE_EQ(f1(x).item<double>(), 2.0);  // evicted: compiled again
  EXPECT_EQ(memory_stats().cache_misses, misses + 1);
  (void)f1(x);
  EXPECT_EQ(memory_stats().cache_misses, misses + 1);
  set_cache_capacity(cap);
}

TEST(Cache, MemoryReturnsToBaselineAndClearCachesEmptiesAll) {
  const auto base = memory_stats();
  {
    Array w = f64({1.0, 2.0, 3.0});
    auto f = jit([w](const Array& a) { return np::sum(a * w); });  // captures a constant
    EXPECT_DOUBLE_EQ(f(f64({1.0, 1.0, 1.0})).item<double>(), 6.0);
    EXPECT_GT(memory_stats().live_slots, base.live_slots);
  }
  const auto after = memory_stats();
  EXPECT_EQ(after.live_slots, base.live_slots);
  EXPECT_EQ(after.live_bytes, base.live_bytes);
  EXPECT_GT(after.jit_cache_entries, 0u);
  EXPECT_GT(after.compiled_kernels, 0u);
  EXPECT_GE(after.peak_bytes, after.live_bytes);
  clear_caches();
  const auto cleared = memory_stats();
  EXPECT_EQ(cleared.jit_cache_entries, 0u);
  EXPECT_EQ(cleared.compiled_kernels, 0u);
}

TEST(JitCompose, WithEveryTransformation) {
  auto f = [](const Array& x) { return np::sum(np::sin(x) * x); };
  Array x = f64({0.3, -0.7, 1.1});
  Array g = grad(f)(x);
  EXPECT_TRUE(all_close(jit(grad(f))(x), vals(g), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(grad(jit(f))(x), vals(g), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(jit(jit(grad(jit(f))))(x), vals(g), 1e-14, 1e-14));
  Array xs = f64({{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}});
  Array per = vmap(grad(f))(xs);
  EXPECT_TRUE(all_close(vmap(jit(grad(f)))(xs), vals(per), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(jit(vmap(grad(f)))(xs), vals(per), 1e-14, 1e-14));
  auto [v, gg] = jit(value_and_grad(f))(x);
  EXPECT_NEAR(v.item<double>(), f(x).item<double>(), 1e-15);
  EXPECT_TRUE(all_close(gg, vals(g), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(jit(hessian(f))(x), vals(hessian(f)(x)), 1e-13, 1e-13));
  auto j = make_jaxpr(jit([](const Array& a) { return jit([](const Array& b) { return b * b; })(a) + 1.0; }))(x);
  EXPECT_EQ(j.jaxpr.eqns.size(), 3u);  // nested jit flattened: mul, broadcast, add
}

TEST(JitCompose, StaticArgumentsSelectTraces) {
  auto core_count = 0;
  auto f = jit([&](const Array& x, int n) {
    ++core_count;
    Array acc = x;
    for (int i = 1; i < n; ++i) acc = acc * x;
    return acc;
  });
  Array x = f64({2.0});
  EXPECT_DOUBLE_EQ(f(x, 3).item<double>(), 8.0);
  EXPECT_DOUBLE_EQ(f(x, 4).item<double>(), 16.0);
  EXPECT_DOUBLE_EQ(f(x, 3).item<double>(), 8.0);
  EXPECT_EQ(core_count, 2);  // traced once per static value
}

TEST(JitCompose, TripleComposeLossJitValueAndGrad) {
  auto loss = [](const Array& th) {
    Array e = np::exp(th);
    Array a = e, b = e, c = np::ones({1}, th.dtype()), total = a + b + c;
    for (int t = 1; t < 20; ++t) {
      Array na = e * a, nb = e * b + e, nc = e * c + 1.0;
      a = na;
      b = nb;
      c = nc;
      total = total + a + b + c;
    }
    return np::sum(total);
  };
  auto [v, g] = jit(value_and_grad(loss))(np::array({0.5}, DType::float64));
  EXPECT_NEAR(v.item<double>(), 284451.7727106761, 1e-7);
  EXPECT_NEAR(g.item<double>(), 4813870.5205, 1e-3);
}

TEST(Passes, SimplifyRemovesIdentitiesDuplicatesAndDeadCode) {
  auto j = make_jaxpr([](const Array& x) {
    Array dead = np::exp(x) * 3.0;
    (void)dead;
    Array a = lax::reshape(lax::transpose(x, {0}), {3});
    return np::sin(a) + np::sin(a);
  })(np::ones({3}));
  Jaxpr s = simplify(j.jaxpr);
  EXPECT_EQ(s.str(), "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = add b b\n  in (c,) }");
  typecheck(s);
}

TEST(Debug, LevelOneLogsCompiles) {
  const std::string err = jxt::debug_log_of(
      [] { (void)jit([](const Array& a) { return np::cos(a) * 3.0 - 1.0; }, {.name = "logged"})(f64({1.0})); });
  EXPECT_NE(err.find("[jx] jit 'logged'"), std::string::npos) << err;
}

TEST(Program, FreesIntermediatesAfterLastUse) {
  auto j = make_jaxpr([](const Array& a) {
    Array l = np::linalg::cholesky(a * 2.0 + 1.0);
    return np::sum(l * l);
  })(np::array({{2.0, 1.0}, {1.0, 2.0}}, DType::float64));
  Program p = lower(simplify(j.jaxpr), LowerOptions{});
  const std::string s = p.str();
  EXPECT_NE(s.find("routine cholesky"), std::string::npos) << s;
  EXPECT_NE(s.find("free"), std::string::npos) << s;
  EXPECT_EQ(p.kernels.size(), 2u) << s;  // the prologue kernel and the reduction
}

// A transcendental over few elements broadcast over many (LowerOptions::hoist_transcendentals:
// launch-bound backends) is a kernel of its own, computed once, and the broadcast reads it: exp of
// 3 parameters broadcast over [64, 128] is not recomputed for each of the 8192 elements. Below 64
// elements per one, or under 4096 in all, or a cheap expression: fused as before.
TEST(Program, TranscendentalsOfFewElementsAreComputedBeforeTheirBroadcast) {
  auto kernels_with_exp = [](const Program& p) {
    std::vector<std::int64_t> sizes;  // the output sizes of the kernels that compute exp
    for (const Kernel& k : p.kernels)
      for (const KNode& n : k.nodes)
        if (n.kind == KNodeKind::alu && n.prim == Prim::exp) {
          sizes.push_back(numel(k.out.shape));
          break;
        }
    return sizes;
  };
  auto program = [](const Shape& xs, bool hoist, bool cheap) {
    auto j = make_jaxpr([cheap](const Array& theta, const Array& x) {
      const Array e = cheap ? theta * 2.0 : np::exp(theta) * np::exp(theta);
      return x * np::reshape(e, {1, 3}) + 1.0;
    })(np::array({0.1, 0.2, 0.3}, DType::float32), np::ones(xs, DType::float32));
    LowerOptions o;
    o.hoist_transcendentals = hoist;
    return lower(simplify(j.jaxpr), o);
  };
  const Program hoisted = program({2731, 3}, true, false);
  EXPECT_EQ(kernels_with_exp(hoisted), (std::vector<std::int64_t>{3})) << hoisted.str();
  EXPECT_EQ(hoisted.kernels.size(), 2u) << hoisted.str();
  const Program as_before = program({2731, 3}, false, false);
  EXPECT_EQ(kernels_with_exp(as_before), (std::vector<std::int64_t>{2731 * 3})) << as_before.str();
  EXPECT_EQ(kernels_with_exp(program({1000, 3}, true, false)), (std::vector<std::int64_t>{3000}));  // under 4096
  EXPECT_EQ(program({2731, 3}, true, true).kernels.size(), 1u);                                     // no transcendental
  // the values: equal to the fused program's on the cpu oracle
  auto f = [](const Array& theta, const Array& x) { return x * np::reshape(np::exp(theta), {1, 3}) + 1.0; };
  const Array theta = np::array({0.1, 0.2, 0.3}, DType::float32);
  const Array x = np::reshape(np::arange(0, 2731 * 3, 1, DType::float32) * 1e-3, {2731, 3});
  const Array want = f(theta, x);
  LowerOptions o;
  o.hoist_transcendentals = true;
  auto [got, kernels] = run_lowered([&](const Xs& v) { return f(v[0], v[1]); }, {theta, x}, o);
  EXPECT_EQ(kernels, 2u);
  EXPECT_TRUE(all_close(got, jxt::vals(want), 1e-6, 1e-6));
}

// IndexEvaluator (core/kernel/index_eval.h): the window test of a concatenate depends on the
// index alone and flips exactly at the seam when evaluated on the host; a condition read from
// memory is not index-only.
TEST(Program, IndexOnlyConditionsEvaluateOnTheHost) {
  auto select_cond = [](const Program& p) -> std::pair<const Kernel*, int> {
    for (const Kernel& k : p.kernels)
      for (const KNode& n : k.nodes)
        if (n.kind == KNodeKind::alu && n.prim == Prim::select) return {&k, n.a};
    return {nullptr, -1};
  };
  const Array x = np::arange(0.0, 5.0, 1.0, DType::float32), y = np::arange(1.0, 4.0, 1.0, DType::float32);
  auto cat = make_jaxpr([](const std::vector<Array>& v) {
    return np::concatenate({np::exp(v[0]), np::log(v[1])});
  })(std::vector<Array>{x, y});
  const Program p = lower(simplify(cat.jaxpr), LowerOptions{});
  const auto [k, cond] = select_cond(p);
  ASSERT_NE(k, nullptr) << p.str();
  IndexEvaluator ev(*k, cond);
  ASSERT_TRUE(ev.index_only()) << k->str();
  const std::vector<std::int64_t> first = {0};
  const double left = ev.at(first);
  for (std::int64_t i = 0; i < 8; ++i) {
    const std::vector<std::int64_t> at = {i};
    EXPECT_EQ(ev.at(at), i < 5 ? left : 1.0 - left) << "index " << i << "\n" << k->str();
  }
  auto by_data = make_jaxpr([](const std::vector<Array>& v) {
    return np::where(np::greater(v[0], np::full({}, 2.0)), np::exp(v[0]), v[0]);
  })(std::vector<Array>{x});
  const Program q = lower(simplify(by_data.jaxpr), LowerOptions{});
  const auto [kd, cd] = select_cond(q);
  ASSERT_NE(kd, nullptr) << q.str();
  EXPECT_FALSE(IndexEvaluator(*kd, cd).index_only()) << kd->str();
}

TEST(Cache, TracesPerJitObjectAreBoundedLeastRecentlyUsedFirst) {
  JitOptions o;
  o.max_traces = 3;
  JitCore core(o);
  int traces = 0;
  FlatFn fn = [&](const std::vector<Array>& in) {
    ++traces;
    return std::vector<Array>{in[0] * 2.0};
  };
  std::any tree;
  auto call = [&](std::int64_t n) {
    return core.call(fmt::format("n{}", n), {np::ones({n}, DType::float64)}, fn, tree).at(0);
  };
  for (std::int64_t n = 1; n <= 10; ++n)
    EXPECT_TRUE(all_close(call(n), std::vector<double>(static_cast<std::size_t>(n), 2.0)));
  EXPECT_EQ(traces, 10);
  EXPECT_EQ(core.traced_signatures(), 3u);  // n = 8, 9, 10 kept
  (void)call(8);
  EXPECT_EQ(traces, 10);  // kept: no new trace, and now the most recently used
  (void)call(1);          // evicted long ago: traced again, evicting n = 9
  EXPECT_EQ(traces, 11);
  (void)call(8);
  (void)call(10);
  EXPECT_EQ(traces, 11);
  (void)call(9);
  EXPECT_EQ(traces, 12);
  EXPECT_EQ(core.traced_signatures(), 3u);
}
