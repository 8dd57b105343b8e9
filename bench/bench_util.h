#pragma once
// Shared by the benchmark programs: comma-separated environment lists.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

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
