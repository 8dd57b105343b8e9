#pragma once
// Shared by the benchmark programs: comma-separated environment lists, and JXBENCH_MAIN
// (BENCHMARK_MAIN with vulkan torn down before the exit handlers).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/backends/vulkan/vulkan.h"

namespace jxbench {

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) v.push_back(x);
  return v;
}

inline std::string env(const char* k, const char* def) {
  const char* v = std::getenv(k);
  return v ? v : def;
}

}  // namespace jxbench

#define JXBENCH_MAIN()                                                \
  int main(int argc, char** argv) {                                   \
    jx::ShutdownAtExit vulkan_teardown;                               \
    benchmark::Initialize(&argc, argv);                               \
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1; \
    benchmark::RunSpecifiedBenchmarks();                              \
    benchmark::Shutdown();                                            \
    return 0;                                                         \
  }
