#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/jx.h"

namespace jxt {

inline std::vector<double> vals(const jx::Array& a) { return a.to_vector<double>(); }

// The affine recurrence as an associative scan: elements (a, b) composed as (a1·a0, a1·b0 + b1),
// so prefix t holds x_t = a_t x_{t-1} + b_t from x_{-1} = 0 (reverse: from the last element on).
inline std::vector<jx::Array> affine_scan(const jx::Array& a, const jx::Array& b, bool reverse = false) {
  return jx::lax::associative_scan_flat(
      [](const std::vector<jx::Array>& p, const std::vector<jx::Array>& q) {
        return std::vector<jx::Array>{q[0] * p[0], q[0] * p[1] + q[1]};
      },
      {a, b}, reverse);
}

// The source tree (scenarios, the DLM fixtures under tests/data/dlm): JX_SOURCE_DIR
// from the environment where the binaries run from a copy elsewhere (scripts/gpu-check packs
// them for the GPU machine), else the tree they were built from.
inline std::string source_dir() {
  const char* e = std::getenv("JX_SOURCE_DIR");
  return e && *e ? std::string(e) : std::string(JX_SOURCE_DIR);
}

// Element-wise |got - want| <= atol + rtol*|want|; NaN matches NaN, infinities match exactly.
inline ::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want,
                                            double rtol = 1e-12, double atol = 1e-12) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w)))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult all_close(const jx::Array& got, const std::vector<double>& want, double rtol = 1e-12,
                                            double atol = 1e-12) {
  return all_close(vals(got), want, rtol, atol);
}

inline std::vector<double> randn(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Runs f, expects exception E whose what() equals msg exactly.
template <class E, class F>
::testing::AssertionResult throws_msg(F&& f, const std::string& msg) {
  try {
    f();
  } catch (const E& e) {
    if (e.what() == msg) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message was: " << e.what() << "\n   expected: " << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// Expects exception E whose what() contains every fragment.
template <class E, class F>
::testing::AssertionResult throws_with(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
  } catch (const E& e) {
    for (auto& s : fragments)
      if (std::string(e.what()).find(s) == std::string::npos)
        return ::testing::AssertionFailure() << "message '" << e.what() << "' lacks '" << s << "'";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// Sets an environment variable for a scope (nullptr: unset), restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// What jx logs on stderr at debug level 1 while f runs (compiles; an associative scan's plan with
// its form, barriers and memory), the debug level restored after.
template <class F>
std::string debug_log_of(F&& f) {
  const int level = jx::debug_level();
  jx::set_debug(1);
  ::testing::internal::CaptureStderr();
  try {
    f();
  } catch (...) {
    (void)::testing::internal::GetCapturedStderr();
    jx::set_debug(level);
    throw;
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  jx::set_debug(level);
  return log;
}

// A compile cache of the current test's own (JX_NATIVE_CACHE, read at every compile), created
// empty with mode 0700 and removed after: ctest runs other native tests at once, whose objects
// would land in a shared one.
class PrivateNativeCache {
 public:
  explicit PrivateNativeCache(const std::string& stem)
      : path(std::filesystem::temp_directory_path() /
             (stem + "-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        env_("JX_NATIVE_CACHE", (std::filesystem::remove_all(path), std::filesystem::create_directory(path),
                                 std::filesystem::permissions(path, std::filesystem::perms::owner_all), path.c_str())) {
  }
  ~PrivateNativeCache() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  const std::filesystem::path path;

 private:
  ScopedEnv env_;
};

}  // namespace jxt
