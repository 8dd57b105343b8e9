// The shapes vulkan gives reductions, against the cpu oracle (part of the test_vulkan binary):
// workgroups and splits for long sums, tiles of outputs for batched small-matrix products, and
// lanes per output for mid-size sums and short expensive ones over few outputs.
#include "core/backends/vulkan/glsl_renderer.h"
#include "core/backends/vulkan/vulkan.h"
#include "core/instrument/instrument.h"
#include "core/jit/program.h"
#include "tests/vulkan_helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::on;
using jxt::vals;

// Reductions over >= 1024 elements per output run in workgroups (strided accumulation, then a
// tree in workgroup memory); from 4096 elements on each output is split over several workgroups of
// one dispatch, whose partials the last one folds in order. Results match the cpu oracle, past
// llvmpipe's 65535-iteration loop limit too, with NaN propagation, int32, bool, epilogues and
// several outputs, and again when the same pipeline runs repeatedly in one submission (the
// counters in its scratch buffer are reset by each dispatch).
TEST(Vulkan, LargeReductionsSplitOverWorkgroups) {
  const double n = 200000;
  using F = std::function<Array(const Array&)>;
  auto iota = [n] { return np::arange(0, n, 1, DType::float32); };
  const std::vector<std::pair<F, double>> cases = {
      {[](const Array& i) { return np::sum(i * 1e-3); }, 1e-6},
      {[](const Array& i) { return np::max(np::where(np::equal(i, 150001.0), NAN, i)); }, 0},  // NaN propagates
      {[](const Array& i) { return np::min(i * -1e-3); }, 1e-6},
      {[](const Array& i) { return np::max(np::astype(i, DType::int32) - 70000.0); }, 0},
      {[](const Array& i) {
         return np::mean(np::reshape(np::sin(i), {4, 50000}), std::vector<std::int64_t>{1});
       },
       1e-6},  // epilogue
      {[](const Array& i) {
         return np::sum(np::reshape(i, {2000, 100}), std::vector<std::int64_t>{0});
       },
       1e-6},  // 100 outputs of 2000
      {[](const Array& i) {
         return np::sum(np::reshape(i, {20, 10000}), std::vector<std::int64_t>{1});
       },
       1e-6},                                                                             // 20 split outputs
      {[n](const Array& i) { return np::max(np::greater(i, np::full({}, n - 2))); }, 0},  // bool, one true term
      {[](const Array& i) { return np::min(np::greater(i, np::full({}, 0.5))); }, 0},     // bool, one false term
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const F& f = cases[c].first;
    std::vector<double> want;
    {
      DefaultDeviceScope cpu("cpu");
      want = vals(f(iota()));
    }
    DefaultDeviceScope vk("vulkan");
    vulkan::reset_counters();
    EXPECT_TRUE(all_close(f(iota()), want, cases[c].second, 1e-6)) << "case " << c;
    auto jf = jit(f);
    std::vector<Array> again;
    for (int r = 0; r < 3; ++r) again.push_back(jf(iota()));  // no host wait in between
    for (const auto& a : again) EXPECT_TRUE(all_close(a, want, cases[c].second, 1e-6)) << "case " << c << " under jit";
  }
}

// Which pipelines ran, from the GPU timings (names carry _split / _wg).
TEST(Vulkan, ReductionsSplitOnlyWithABindingToSpare) {
  DefaultDeviceScope vk("vulkan");
  vulkan::set_timing(true);
  auto ran = [](const std::function<Array()>& f) {
    vulkan::reset_timings();
    (void)f().to_vector<double>();
    std::string names;
    for (const auto& t : vulkan::timings()) names += t.name + " ";
    return names;
  };
  Array x = np::arange(0, 100000, 1, DType::float32) * 1e-5;
  EXPECT_NE(ran([&] { return np::sum(x); }).find("_split"), std::string::npos);
  EXPECT_NE(ran([&] {
              return np::sum(np::index(x, {np::Slice{0, 2000}}));
            }).find("_wg"),
            std::string::npos);  // one workgroup suffices
  // seven inputs and the output fill the WebGPU profile's 8 bindings: jit lowers the terms into a
  // kernel of their own so that the reduction keeps a binding for its scratch buffer and splits
  std::vector<Array> in;
  for (int i = 0; i < 7; ++i) in.push_back(x + static_cast<double>(i));
  auto terms = [](const std::vector<Array>& v) { return v[0] * v[1] + v[2] * v[3] + v[4] * v[5] + v[6]; };
  auto seven = jit([&](const std::vector<Array>& v) { return np::sum(terms(v)); });
  std::vector<double> want;
  {
    DefaultDeviceScope cpu("cpu");
    std::vector<Array> on_cpu;
    for (const auto& a : in) on_cpu.push_back(device_put(a, "cpu"));
    want = vals(np::sum(terms(on_cpu)));
  }
  Array got;
  trace::DispatchTracker t;
  const std::string names = ran([&] { return got = seven(in); });
  EXPECT_NE(names.find("_split"), std::string::npos) << names;
  EXPECT_LE(t.max_buffers(), 8) << names;
  EXPECT_TRUE(all_close(got, want, 1e-5, 0));
  // a kernel that fills the bindings itself (lowered without a budget) renders one workgroup per output
  ClosedJaxpr cj = make_jaxpr([&](const std::vector<Array>& v) { return np::sum(terms(v)); })(in);
  // (lowering decides whether a kernel has a binding to spare: Kernel::scratch_binding)
  LowerOptions eight, nine;
  eight.max_bindings = 8;
  nine.max_bindings = 9;
  Program p = lower(cj.jaxpr, eight), q = lower(cj.jaxpr, nine);
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_EQ(q.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].buffers(), 8);
  EXPECT_FALSE(p.kernels[0].scratch_binding);
  EXPECT_TRUE(q.kernels[0].scratch_binding);
  EXPECT_EQ(vk::render_kernel(p.kernels[0], false).name.find("_split"), std::string::npos);
  EXPECT_NE(vk::render_kernel(p.kernels[0], false).name.find("_wg"), std::string::npos);
  EXPECT_NE(vk::render_kernel(q.kernels[0], false).name.find("_split"), std::string::npos);
  vulkan::set_timing(false);
}

// A split sum over 2 to 256 outputs along the last dim, whose loads lie closer along it than
// along the reduced dim (a sum over time of per-time matrices), puts its lanes across the outputs
// (glsl_split.cc): against the cpu oracle for several output counts (so several phases a
// workgroup: 2 outputs 128 of them, 169 and 256 one, lanes idle past 169), sums over a
// product of two [T, 8, 8] series (the DLM gradient's), int32, NaN through max, an epilogue, and
// three calls in one submission (the counter is reset by each). 257 outputs, and a sum whose
// loads lie closer along the reduced dim (a transposed view), take the split form.
TEST(Vulkan, LongSumsOverFewOutputsPutLanesAcrossThem) {
  using F = std::function<Array(const Array&)>;
  const std::int64_t T = 5000;
  const F over_time = [](const Array& x) { return np::sum(x, std::vector<std::int64_t>{0}); };
  auto series = [T](std::int64_t o) {
    return np::array(jxt::randn(static_cast<std::size_t>(T * o), static_cast<unsigned>(o)), Shape{T, o});
  };
  struct Case {
    const char* what;
    F f;
    Array x;
    double tol;
    bool outs;  // takes the lanes-across-outputs form
  };
  const Array y = np::array(jxt::randn(static_cast<std::size_t>(T * 128), 3), Shape{T, 2, 8, 8});
  const std::vector<Case> cases = {
      {"2 outputs", over_time, series(2), 1e-6, true},
      {"3 outputs", over_time, series(3), 1e-6, true},
      {"64 outputs", over_time, series(64), 1e-6, true},
      {"169 outputs", over_time, series(169), 1e-6, true},
      {"256 outputs", over_time, series(256), 1e-6, true},
      {"257 outputs", over_time, series(257), 1e-6, false},
      {"a product of two series",
       [](const Array& v) {
         const Array a = np::index(v, {np::Slice{}, std::int64_t{0}}), b = np::index(v, {np::Slice{}, std::int64_t{1}});
         return np::sum(a * np::swapaxes(b, 1, 2) + a, std::vector<std::int64_t>{0});
       },
       y, 1e-5, true},
      {"int32", [&](const Array& v) { return over_time(np::astype(v * 100.0, DType::int32)); }, series(8), 0, true},
      {"NaN through max",
       [](const Array& v) {
         return np::max(np::where(np::greater(v, np::full({}, 3.0)), NAN, v), std::vector<std::int64_t>{0});
       },
       series(16), 0, true},
      {"mean (an epilogue)", [](const Array& v) { return np::mean(v, std::vector<std::int64_t>{0}); }, series(5), 1e-6,
       true},
      {"a transposed view", [&](const Array& v) { return over_time(np::transpose(v)); }, np::transpose(series(16)),
       1e-6, false},
  };
  vulkan::set_timing(true);
  for (const Case& c : cases) {
    const std::vector<double> want = vals(c.f(c.x));  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    const Array xv = device_put(c.x, "vulkan");
    auto jf = jit(c.f);
    vulkan::reset_timings();
    std::vector<Array> got;
    for (int r = 0; r < 3; ++r) got.push_back(jf(xv));  // no host wait in between
    for (const Array& g : got) EXPECT_TRUE(all_close(g, want, c.tol, c.tol)) << c.what;
    std::string names;
    for (const auto& t : vulkan::timings()) names += t.name + " ";
    EXPECT_EQ(names.find("_split_outs") != std::string::npos, c.outs) << c.what << ": " << names;
    EXPECT_NE(names.find("_split"), std::string::npos) << c.what << ": " << names;
  }
  vulkan::set_timing(false);
}

namespace {
using TileF = std::function<Array(const Array&, const Array&)>;
struct TileCase {
  std::string what;
  Shape a, b;
  DType d;
  TileF f;
  std::string tile;  // in the shader's name ("": not tiled)
};

std::vector<TileCase> tile_cases() {
  const TileF mm = [](const Array& a, const Array& b) { return np::matmul(a, b); };
  return {
      {"16x16 products", {37, 16, 16}, {37, 16, 16}, DType::float32, mm, "_t4x4"},
      {"13x13 (no tile divides 13)", {37, 13, 13}, {37, 13, 13}, DType::float32, mm, ""},
      {"6x12 by 12x3", {9, 6, 12}, {9, 12, 3}, DType::float32, mm, "_t3x3"},
      {"by a transposed view",
       {11, 6, 16},
       {11, 6, 16},
       DType::float32,
       [](const Array& a, const Array& b) { return np::matmul(a, np::swapaxes(b, 1, 2)); },
       "_t3x3"},
      {"int32", {5, 4, 12}, {5, 12, 4}, DType::int32, mm, "_t4x4"},
      {"float64, 70 terms", {7, 16, 70}, {7, 70, 16}, DType::float64, mm, "_t4x4"},
      {"matrix by vector (a column's loads would save too little)", {9, 16, 16}, {9, 16, 1}, DType::float32, mm, ""},
      {"an epilogue (mean)",
       {6, 6, 12},
       {6, 6, 12},
       DType::float32,
       [](const Array& a, const Array& b) {
         return np::mean(np::expand_dims(a, 2) * np::expand_dims(b, 1), std::vector<std::int64_t>{3});
       },
       "_t3x3"},
      {"bool outputs",
       {7, 6, 8},
       {7, 4, 8},
       DType::float32,
       [](const Array& a, const Array& b) {
         const Array z = np::zeros({}, a.dtype());
         return np::max(np::logical_and(np::greater(np::expand_dims(a, 2), z), np::greater(np::expand_dims(b, 1), z)),
                        std::vector<std::int64_t>{3});
       },
       "_t3x4"},
      {"every load on both dims (not tiled)",
       {6, 4, 4, 8},
       {6, 4, 4, 8},
       DType::float32,
       [](const Array& a, const Array& b) { return np::sum(a * b, std::vector<std::int64_t>{3}); },
       ""},
  };
}
}  // namespace

// Short reductions whose loads each skip one of the two innermost output dims (batched products
// of small matrices) compute a tile of outputs per invocation (glsl_tiles.cc: reduction_tile):
// the values against the cpu oracle and the tile each shader took, from the GPU timings' names.
TEST(Vulkan, SmallMatrixProductsComputeATileOfOutputsPerInvocation) {
  const std::int64_t floor = vk::tile_floor();
  vk::set_tile_floor(0);  // these batches are small: no floor (llvmpipe's)
  vulkan::set_timing(true);
  for (const auto& c : tile_cases()) {
    auto input = [&](const Shape& s, unsigned seed) {
      std::int64_t n = 1;
      for (auto e : s) n *= e;
      std::vector<double> v = jxt::randn(static_cast<std::size_t>(n), seed);
      if (c.d == DType::int32)
        for (double& x : v) x = std::round(4 * x);
      return np::astype(np::array(v, s, DType::float64), c.d);
    };
    const Array a = input(c.a, 3), b = input(c.b, 4);
    const std::vector<double> want = vals(c.f(a, b));  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    vulkan::reset_timings();
    const Array got = jit(c.f)(device_put(a, "vulkan"), device_put(b, "vulkan"));
    const double tol = c.d == DType::float32 ? 2e-5 : c.d == DType::float64 ? 1e-12 : 0;
    EXPECT_TRUE(all_close(got, want, tol, tol)) << c.what;
    std::string names;
    for (const auto& t : vulkan::timings()) names += t.name + " ";
    if (c.tile.empty())
      EXPECT_EQ(names.find("_t"), std::string::npos) << c.what << ": " << names;
    else
      EXPECT_NE(names.find(c.tile), std::string::npos) << c.what << ": " << names;
  }
  vulkan::set_timing(false);
  vk::set_tile_floor(floor);
}

// On a GPU a tile keeps the shader at least 2^18 invocations (llvmpipe: no floor): 4 × 4 tiles
// from 2^18 of them, 4 × 2 or 2 × 2 below, none where even those would leave too few.
TEST(Vulkan, ATileLeavesTheShaderItsFloorOfInvocations) {
  const std::int64_t floor = vk::tile_floor();
  vk::set_tile_floor(std::int64_t{1} << 18);
  auto tile_of = [](std::int64_t batch) {
    const Array a = np::zeros({batch, 16, 16});
    ClosedJaxpr cj =
        make_jaxpr([](const std::vector<Array>& v) { return np::matmul(v[0], v[1]); })(std::vector<Array>{a, a});
    Program p = lower(cj.jaxpr, LowerOptions{});
    return p.kernels.size() == 1 ? vk::render_kernel(p.kernels[0], false).name : std::string("(kernels)");
  };
  EXPECT_NE(tile_of(16384).find("_t4x4"), std::string::npos) << tile_of(16384);
  EXPECT_NE(tile_of(8192).find("_t4x2"), std::string::npos) << tile_of(8192);
  EXPECT_NE(tile_of(4096).find("_t2x2"), std::string::npos) << tile_of(4096);
  EXPECT_EQ(tile_of(1024).find("_t"), std::string::npos) << tile_of(1024);
  vk::set_tile_floor(floor);
}

// On a GPU a reduction of 128 to 1023 terms over fewer outputs than fill it gives each output 32
// invocations and a tree (glsl_tiles.cc: lanes_reduction); llvmpipe keeps one invocation per
// output, so the test sets the GPU's floor to render and run the lanes here.
TEST(Vulkan, MidSizeReductionsOverFewOutputsFoldInLanes) {
  using F = std::function<Array(const Array&)>;
  const std::vector<std::pair<F, double>> cases = {
      {[](const Array& x) {
         return np::sum(np::exp(x) * x, std::vector<std::int64_t>{1, 2});
       },
       1e-6},  // 256 terms
      {[](const Array& x) {
         return np::max(np::where(np::greater(x, np::full({}, 2.5)), NAN, x), std::vector<std::int64_t>{2, 1});
       },
       0},  // NaN propagates
      {[](const Array& x) {
         return np::min(np::astype(x * 100.0, DType::int32), std::vector<std::int64_t>{1, 2});
       },
       0},
      {[](const Array& x) {
         return np::mean(np::reshape(x, {1000, 2, 128}), std::vector<std::int64_t>{2});
       },
       1e-6},  // 2000 outputs of 128 terms, an epilogue
      {[](const Array& x) {
         return np::max(np::greater(x, np::full({}, 3.2)), std::vector<std::int64_t>{1, 2});
       },
       0},
  };
  const Array x = np::array(jxt::randn(1000 * 256, 9), Shape{1000, 16, 16});
  const std::int64_t floor = vk::tile_floor();
  vk::set_tile_floor(std::int64_t{1} << 18);
  vulkan::set_timing(true);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::vector<double> want = vals(cases[c].first(x));  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    vulkan::reset_timings();
    const Array got = jit(cases[c].first)(device_put(x, "vulkan"));
    EXPECT_TRUE(all_close(got, want, cases[c].second, cases[c].second)) << "case " << c;
    std::string names;
    for (const auto& t : vulkan::timings()) names += t.name + " ";
    EXPECT_NE(names.find("_lanes"), std::string::npos) << "case " << c << ": " << names;
  }
  // a lanes reduction shares a dispatch with independent kernels (each workgroup runs one member)
  {
    DefaultDeviceScope vk("vulkan");
    auto two = jit([](const Array& v) {
      return std::vector<Array>{np::sum(v, std::vector<std::int64_t>{1, 2}), np::exp(v)};
    });
    const Array xv = device_put(x, "vulkan");
    vulkan::reset_timings();
    std::vector<Array> got;
    std::size_t dispatches = 0;
    {
      trace::DispatchTracker t;
      got = two(xv);
      dispatches = t.dispatches();
    }
    EXPECT_TRUE(all_close(got[0], vals(np::sum(x, std::vector<std::int64_t>{1, 2})), 1e-6, 1e-6));
    EXPECT_TRUE(all_close(got[1], vals(np::exp(x)), 1e-6, 1e-6));
    EXPECT_EQ(dispatches, 1u);
    std::string names;
    for (const auto& tm : vulkan::timings()) names += tm.name + " ";
    EXPECT_NE(names.find("_lanes+"), std::string::npos) << names;
  }
  vulkan::set_timing(false);
  vk::set_tile_floor(floor);
}

// A short sum (4 to 127 terms) whose terms are expensive (terms × body nodes >= 2048) gets lanes
// too: the power of two >= its terms, one term per lane (16 terms: 16 lanes; 10 terms: 16 lanes,
// 6 of them folding nothing); a cheap short sum keeps an invocation per output.
TEST(Vulkan, ShortExpensiveReductionsFoldInLanes) {
  auto body = [](const Array& x) {  // hundreds of nodes per term
    Array y = x;
    for (int i = 0; i < 100; ++i) y = y * 0.99 + np::sin(x) * 0.01;
    return y;
  };
  using F = std::function<Array(const Array&)>;
  const std::vector<std::tuple<F, bool, const char*>> cases = {
      {[&](const Array& x) { return np::sum(body(x), std::vector<std::int64_t>{2}); }, true, "16 terms"},
      {[&](const Array& x) {
         return np::max(body(np::reshape(x, {25600, 10})), std::vector<std::int64_t>{1});
       },
       true, "10 terms"},
      {[](const Array& x) { return np::sum(x * 2.0, std::vector<std::int64_t>{2}); }, false, "cheap"},
  };
  const Array x = np::array(jxt::randn(1000 * 256, 4), Shape{1000, 16, 16});
  const std::int64_t floor = vk::tile_floor();
  vk::set_tile_floor(std::int64_t{1} << 18);
  vulkan::set_timing(true);
  for (const auto& [f, lanes, what] : cases) {
    const std::vector<double> want = vals(f(x));  // eager on cpu
    DefaultDeviceScope vk("vulkan");
    vulkan::reset_timings();
    const Array got = jit(f)(device_put(x, "vulkan"));
    // float terms of 100 chained steps each, summed to values near 0: 2e-4 absolute (a term out
    // of place would be off by ~1)
    EXPECT_TRUE(all_close(got, want, 1e-4, 2e-4)) << what;
    std::string names;
    for (const auto& t : vulkan::timings()) names += t.name + " ";
    EXPECT_EQ(names.find("_lanes") != std::string::npos, lanes) << what << ": " << names;
  }
  vulkan::set_timing(false);
  vk::set_tile_floor(floor);
}
