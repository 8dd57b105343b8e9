// Differential tests (ggml test-backend-ops style): jitted programs on `native` against the
// cpu interpreter on random inputs, float64 and float32, plus the compiler, caches and pool.
#include <bit>
#include <filesystem>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <cstring>
#include <fstream>

#include "core/backends/backend.h"
#include "core/backends/huge_arena.h"
#include "core/backends/native/c_renderer.h"
#include "core/backends/native/compiler.h"
#include "core/instrument/instrument.h"
#include "tests/prim_cases.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
std::vector<Array> on(const std::vector<Array>& xs, const std::string& be) {
  std::vector<Array> r;
  for (const Array& x : xs) r.push_back(device_put(x, be));
  return r;
}
}  // namespace

class NativeEveryCase : public ::testing::TestWithParam<jxt::Case> {};

TEST_P(NativeEveryCase, JitMatchesCpu) {
  const auto& c = GetParam();
  auto f = jit([fn = c.f](const std::vector<Array>& in) { return fn(in); });
  for (DType d : {DType::float64, DType::float32}) {
    std::vector<Array> x;
    for (auto& a : jxt::random_inputs(c, 31)) x.push_back(np::astype(a, d));
    Array want = f(x);  // cpu program
    DefaultDeviceScope native("native");
    Array got = f(on(x, "native"));
    EXPECT_EQ(got.backend().info().backend, "native");
    EXPECT_EQ(got.aval(), want.aval());
    const double tol = d == DType::float64 ? 1e-13 : 2e-6;
    EXPECT_TRUE(all_close(got, vals(want), tol, tol)) << c.name << " " << dtype_name(d);
  }
}

TEST_P(NativeEveryCase, JitOfVjpMatchesCpu) {
  const auto& c = GetParam();
  auto pull = jit([fn = c.f](const std::vector<Array>& in) {
    auto [y, lin] = vjp_flat([&](const std::vector<Array>& a) { return std::vector<Array>{fn(a)}; }, in);
    return lin.transpose({np::ones_like(y[0])});
  });
  auto x = jxt::random_inputs(c, 32);
  auto want = pull(x);
  DefaultDeviceScope native("native");
  auto got = pull(on(x, "native"));
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(all_close(got[i], vals(want[i]), 1e-12, 1e-12)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(All, NativeEveryCase, ::testing::ValuesIn(jxt::cases()),
                         [](const auto& info) { return info.param.name; });

namespace {
// Equal bit for bit (signed zeros included); NaN matches NaN.
::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::isnan(got[i]) && std::isnan(want[i])) &&
        std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}
}  // namespace

// Kernels of at least native::kParallelElements elements run on OpenMP threads: elementwise over
// their outputs, reductions over their outputs (many) or over each output's terms (few), the
// terms then summed in the interpreter's order. Every result equals the interpreter's bit for bit.
TEST(Native, LargeKernelsRunOnThreadsAndMatchTheInterpreterBitForBit) {
  const std::string flag = native::openmp_flag();
  const char* off = std::getenv("JX_NATIVE_OPENMP");
  if (!(off && std::string(off) == "0")) {
    EXPECT_EQ(flag, " -fopenmp") << "the C compiler should build OpenMP objects (libgomp)";
  }
  EXPECT_NE(native::compiler_command().find(flag), std::string::npos);
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("jx-native-par-" + std::to_string(::getpid()))).string();
  ::setenv("JX_NATIVE_CACHE", cache.c_str(), 1);
  auto prog = [](const Array& a, const Array& b, const Array& c, const Array& i) {
    Array e = a * a / b + np::log(b);                                                 // elementwise, 3 x 70000
    Array full = np::sum(e);                                                          // one output, 210000 terms
    Array rows = np::sum(e, std::vector<std::int64_t>{1});                            // 3 outputs of 70000 terms
    Array cols = np::max(np::reshape(e, {2100, 100}), std::vector<std::int64_t>{0});  // 100 outputs
    Array two =
        np::prod(np::reshape(c, {2, 300, 300}) * 0.001 + 1.0, std::vector<std::int64_t>{1, 2});  // terms over two dims
    Array ints = np::sum(i * 7, std::vector<std::int64_t>{0, 1});
    return std::vector<Array>{e, full, rows, cols, two, ints};
  };
  auto f = jit([&](const std::vector<Array>& x) { return prog(x[0], x[1], x[2], x[3]); });
  for (DType d : {DType::float32, DType::float64}) {
    auto a_v = jxt::randn(210000, 3), b_v = jxt::randn(210000, 4), c_v = jxt::randn(180000, 5);
    for (auto& x : b_v) x = std::abs(x) + 0.05;
    a_v[1234] = std::nan("");  // NaN reaches the sum and the max of its column
    b_v[99] = 0.0;             // -> inf terms
    std::vector<Array> x{np::array(a_v, Shape{3, 70000}, d), np::array(b_v, Shape{3, 70000}, d),
                         np::array(c_v, Shape{180000}, d),
                         np::astype(np::array(c_v, Shape{600, 300}, d) * 1000.0, DType::int32)};
    std::vector<Array> want;
    {
      DefaultDeviceScope cpu("cpu");  // the interpreter, whatever JX_DEVICE says
      want = f(on(x, "cpu"));
    }
    DefaultDeviceScope native("native");
    auto got = f(on(x, "native"));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].backend().info().backend, "native");
      EXPECT_TRUE(same_bits(vals(got[k]), vals(want[k]))) << "output " << k << " " << dtype_name(d);
    }
  }
  ::unsetenv("JX_NATIVE_CACHE");
  std::size_t parallel_loops = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache))
    if (e.path().extension() == ".c") {
      std::ifstream in(e.path());
      const std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (std::size_t p = src.find("#pragma omp parallel for"); p != std::string::npos;
           p = src.find("#pragma omp parallel for", p + 1))
        ++parallel_loops;
    }
  std::filesystem::remove_all(cache);
  EXPECT_GE(parallel_loops, 2u * 5u);  // per dtype: the elementwise kernel and every reduction
}

// float32 sums of 3 to 64 terms (a 16 x 16 matrix product's) accumulate in float, in the
// interpreter's order: a few ulps from it, and the generated C holds float accumulators; float64
// products keep double ones. With JX_NATIVE_F32_ACC=0 (the ctest entry native_f32_acc_off) every
// result equals the interpreter's bit for bit. Two-term sums keep double either way.
TEST(Native, ShortFloat32SumsAccumulateInFloat) {
  const char* env = std::getenv("JX_NATIVE_F32_ACC");
  const bool off = env && std::string(env) == "0";
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("jx-native-f32acc-" + std::to_string(::getpid()))).string();
  ::setenv("JX_NATIVE_CACHE", cache.c_str(), 1);
  auto f = jit([](const std::vector<Array>& x) { return std::vector<Array>{np::matmul(x[0], x[1])}; });
  for (DType d : {DType::float32, DType::float64}) {
    std::vector<Array> x{np::array(jxt::randn(256, 7), Shape{16, 16}, d),
                         np::array(jxt::randn(256, 8), Shape{16, 16}, d)};
    std::vector<Array> want;
    {
      DefaultDeviceScope cpu("cpu");
      want = f(on(x, "cpu"));
    }
    DefaultDeviceScope native("native");
    const std::vector<double> got = vals(f(on(x, "native"))[0]), w = vals(want[0]);
    if (off || d == DType::float64)
      EXPECT_TRUE(same_bits(got, w)) << dtype_name(d);
    else
      EXPECT_TRUE(all_close(got, w, 1e-5, 1e-5)) << dtype_name(d);
  }
  ::unsetenv("JX_NATIVE_CACHE");
  std::string src;
  for (const auto& e : std::filesystem::directory_iterator(cache))
    if (e.path().extension() == ".c") {
      std::ifstream in(e.path());
      src += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
  std::filesystem::remove_all(cache);
  EXPECT_EQ(src.find("float accs[") != std::string::npos, !off) << "float accumulators in the generated C";
  EXPECT_NE(src.find("double accs["), std::string::npos);  // the float64 product's
}

TEST(Native, DeviceAndEagerOps) {
  auto devs = devices();
  auto it = std::find_if(devs.begin(), devs.end(), [](auto& d) { return d.backend == "native"; });
  ASSERT_NE(it, devs.end());
  EXPECT_TRUE(it->available) << it->reason;
  DefaultDeviceScope native("native");
  Array a = np::array({{1.0, 2.0}, {3.0, 4.0}}, DType::float64);
  EXPECT_EQ(a.backend().info().backend, "native");
  EXPECT_TRUE(all_close(np::linalg::inv(a), {-2, 1, 1.5, -0.5}, 1e-14, 1e-14));
  EXPECT_TRUE(jxt::throws_with<BackendError>([&] { np::add(a, device_put(a, "cpu")); }, {"different backends"}));
}

TEST(Native, DiskCacheIsReusedAndCorruptEntriesRebuilt) {
  const std::string src = native::c_prelude() + "double jx_probe_" +
                          std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                          "(double x) { return x * 2.0; }\n";
  std::string path;
  {
    auto first = native::compile(src);
    auto again = native::compile(src);
    EXPECT_TRUE(again.from_disk);
    EXPECT_EQ(first.path, again.path);
    path = first.path;
  }  // both handles released: the library is unloaded
  {  // replace the cached object with a truncated one (new inode; a mapped file is never modified)
    std::ofstream f(path + ".bad", std::ios::trunc);
    f << "garbage";
  }
  std::filesystem::rename(path + ".bad", path);
  auto rebuilt = native::compile(src);
  EXPECT_FALSE(rebuilt.from_disk);
  EXPECT_GT(std::filesystem::file_size(rebuilt.path), 100u);
  EXPECT_TRUE(jxt::throws_with<BackendError>([] { native::compile("this is not C"); }, {"the C compiler failed"}));
}

TEST(Native, ProgramsCompileOnceAndLoadFromDiskAfterClearingCaches) {
  DefaultDeviceScope native("native");
  auto f = jit([](const Array& x) { return np::tanh(x) * 3.0 + np::sum(x); });
  Array x = np::array({0.5, 1.5}, DType::float64);
  std::vector<std::string> compiles;
  trace::Subscription sub([&](const trace::Event& e) {
    if (e.kind == trace::EventKind::compile && e.backend == "native" && e.name == "cc") compiles.push_back(e.detail);
  });
  (void)f(x);
  (void)f(x);
  clear_caches();
  Array y = f(x);
  ASSERT_GE(compiles.size(), 1u);
  EXPECT_EQ(compiles.back(), "disk cache");
  EXPECT_TRUE(all_close(y, {std::tanh(0.5) * 3 + 2, std::tanh(1.5) * 3 + 2}, 1e-14, 1e-14));
}

// Two programs sharing a kernel (the sum) load the same objects in either order: a program's
// object holds all its kernels, not only those another program did not load before (the
// constant is new each run, so the disk cache cannot hold objects of an earlier run). The cache
// is this test's own: ctest runs other native tests at once, and their objects land in the shared
// one between the two listings.
TEST(Native, KernelObjectsDependOnTheProgramNotTheOrder) {
  const jxt::PrivateNativeCache own_cache("jx-native-order");
  DefaultDeviceScope native("native");
  const double c = 1.0 + ::testing::UnitTest::GetInstance()->random_seed() * 1e-6 +
                   static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() % 1000003) * 1e-13;
  auto a = [c](const Array& x) { return np::sum(np::exp(x * c)) * x; };
  auto b = [c](const Array& x) { return np::sum(np::exp(x * c)) + x; };
  Array x = np::array({0.5, 1.5, 2.5}, DType::float64);
  auto objects = [] {
    std::set<std::string> r;
    for (const auto& e : std::filesystem::directory_iterator(native::cache_dir()))
      if (e.path().extension() == ".so") r.insert(e.path().filename().string());
    return r;
  };
  clear_caches();
  const std::set<std::string> before = objects();
  const double ya = jit(a)(x).to_vector<double>()[0], yb = jit(b)(x).to_vector<double>()[0];
  const std::set<std::string> after_ab = objects();
  EXPECT_GE(after_ab.size(), before.size() + 2);  // each program's object
  clear_caches();
  EXPECT_EQ(jit(b)(x).to_vector<double>()[0], yb);
  EXPECT_EQ(jit(a)(x).to_vector<double>()[0], ya);
  EXPECT_EQ(objects(), after_ab);  // b then a: no new object
  clear_caches();                  // unmaps the objects before their folder goes
}

TEST(Native, PoolReusesAndReturnsMemory) {
  DefaultDeviceScope native("native");
  clear_caches();
  const auto base = backend("native").memory();
  {
    Array a = np::zeros({1000}, DType::float64);
    Array b = np::ones({1000}, DType::float64);
  }
  const auto pooled = backend("native").memory();
  EXPECT_EQ(pooled.live_slots, base.live_slots);
  EXPECT_GE(pooled.pooled_bytes, 8192u);  // two 8000-byte slots rounded up to their class
  EXPECT_GE(memory_stats().pooled_bytes, pooled.pooled_bytes);
  clear_caches();  // trims the pool
  EXPECT_EQ(backend("native").memory().pooled_bytes, 0u);
}

// The pool keeps what the program's peak needs (over the 64 MiB floor): three 32 MiB blocks live
// at once all return to it and serve the next round without growing it (a fixed 64 MiB budget
// gave two of them back, and each round faulted them in again); clear_caches() empties it.
TEST(Native, PoolKeepsThePeakWorkingSet) {
  DefaultDeviceScope native("native");
  clear_caches();
  const std::int64_t n = std::int64_t{4} << 20;  // float64: 32 MiB
  auto round = [n] {
    Array a = np::zeros({n}, DType::float64);
    Array b = a + 1.0;
    Array c = b * 2.0;
    return np::sum(c).item<double>();
  };
  EXPECT_EQ(round(), 2.0 * static_cast<double>(n));
  const std::size_t kept = backend("native").memory().pooled_bytes;
  EXPECT_GE(kept, std::size_t{3} << 25);
  EXPECT_EQ(round(), 2.0 * static_cast<double>(n));
  EXPECT_EQ(backend("native").memory().pooled_bytes, kept);
  clear_caches();
  EXPECT_EQ(backend("native").memory().pooled_bytes, 0u);
}

// The pool's large blocks (HugeArena): 64-byte aligned, disjoint, each keeping what was written
// to it while others come and go, including a block larger than a region; a block given back
// loses its pages (mincore) and is the next block of its size.
TEST(HugeArena, BlocksAreAlignedDisjointAndKeepTheirContents) {
  HugeArena arena;
  const std::vector<std::size_t> sizes{64 << 10, 256 << 10, 100, 3 << 20, 20 << 20, 128 << 10};
  std::vector<std::byte*> blocks;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::byte* p = arena.take(sizes[i]);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
    std::memset(p, static_cast<int>(i + 1), sizes[i]);
    blocks.push_back(p);
  }
  for (std::size_t i = 0; i < sizes.size(); ++i)
    for (std::size_t j = 0; j < sizes.size(); ++j)
      if (i != j) EXPECT_TRUE(blocks[i] + sizes[i] <= blocks[j] || blocks[j] + sizes[j] <= blocks[i]) << i << " " << j;
  arena.give_back(blocks[1], sizes[1]);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i == 1) continue;
    const auto expect = static_cast<std::byte>(i + 1);
    EXPECT_EQ(blocks[i][0], expect);
    EXPECT_EQ(blocks[i][sizes[i] - 1], expect);
    EXPECT_EQ(std::count(blocks[i], blocks[i] + sizes[i], expect), static_cast<std::ptrdiff_t>(sizes[i])) << i;
  }
}

TEST(HugeArena, GivenBackBlocksLoseTheirPagesAndServeTheirSize) {
  HugeArena arena;
  const std::size_t n = std::size_t{1} << 20;
  std::byte* p = arena.take(n);
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, n);
  arena.give_back(p, n);
  std::byte* q = arena.take(n);
  ASSERT_NE(q, nullptr);
  if (HugeArena::kSanitized) {  // ASan: blocks are malloc's, to keep their bounds checked
    std::memset(q, 1, n);
    EXPECT_EQ(q[n - 1], std::byte{1});
    return;
  }
  EXPECT_EQ(q, p);
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident(n / static_cast<std::size_t>(page));
  ASSERT_EQ(mincore(q, n, resident.data()), 0);
  EXPECT_EQ(std::count(resident.begin(), resident.end(), 0), static_cast<std::ptrdiff_t>(resident.size()));
  EXPECT_EQ(std::count(q, q + n, std::byte{0}), static_cast<std::ptrdiff_t>(n));  // fresh pages read as 0
}

TEST(Native, ShapeSweepIncludingEmptyAndIntegerPrograms) {
  auto prog = [](const Array& a, const Array& b, const Array& i) {
    Array f = np::where(np::greater(a, b), np::exp(a) - b, np::maximum(a, b) * 0.5);
    Array r =
        np::sum(f * f, std::vector<std::int64_t>{-1}, true) + np::mean(np::transpose(f), std::vector<std::int64_t>{0});
    Array ints = np::sum(i * 3.0 - np::astype(np::less(a, 0.0), DType::int32), std::vector<std::int64_t>{0});
    Array bools = np::logical_or(np::isnan(a), np::greater(i, 2.0));
    return std::tuple{r, ints, bools};
  };
  auto jf = jit(prog);
  std::mt19937 g(5);
  for (Shape s : {Shape{1, 1}, Shape{3, 1}, Shape{1, 5}, Shape{4, 7}, Shape{0, 3}, Shape{2, 0}, Shape{17, 33}}) {
    for (DType d : {DType::float64, DType::float32}) {
      auto rnd = [&](unsigned seed) {
        std::vector<double> v(static_cast<std::size_t>(numel(s)));
        std::mt19937 gg(seed);
        std::normal_distribution<double> z;
        for (auto& x : v) x = z(gg);
        return np::array(v, s, d);
      };
      Array a = rnd(g()), b = rnd(g()), i = np::astype(rnd(g()) * 3.0, DType::int32);
      auto [r, ints, bools] = jf(a, b, i);
      DefaultDeviceScope native("native");
      auto [rn, in, bn] = jf(device_put(a, "native"), device_put(b, "native"), device_put(i, "native"));
      const double tol = d == DType::float64 ? 1e-12 : 1e-5;
      EXPECT_TRUE(all_close(rn, vals(r), tol, tol)) << shape_str(s) << dtype_name(d);
      EXPECT_EQ(in.to_vector<int>(), ints.to_vector<int>()) << shape_str(s);
      EXPECT_EQ(bn.to_vector<int>(), bools.to_vector<int>()) << shape_str(s);
    }
  }
}
