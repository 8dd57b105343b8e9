#pragma once
// Shared by the DLM test files: fixtures from tests/data/dlm (a copy of ../shared/data/dlm), flattened
// JSON numbers, and a comparison scaled by the largest reference value.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/jx.h"
#include "tests/helpers.h"

namespace dlmt {

using json = nlohmann::json;
using jx::Array;

inline json load(const std::string& name) {
  std::ifstream f(jxt::source_dir() + "/tests/data/dlm/" + name);
  if (!f) throw std::runtime_error("fixture " + name + " not found in tests/data/dlm");
  return json::parse(f);
}

// Flattens nested JSON numbers (null = NaN) in row-major order.
inline void flat(const json& j, std::vector<double>& out) {
  if (j.is_array())
    for (const auto& e : j) flat(e, out);
  else
    out.push_back(j.is_null() ? NAN : j.get<double>());
}
inline std::vector<double> flat(const json& j) {
  std::vector<double> v;
  flat(j, v);
  return v;
}

// |got - want| <= rtol * max|want| element by element (states and covariances span scales).
inline ::testing::AssertionResult close_scaled(const Array& got, const json& want, double rtol,
                                               const std::string& what) {
  auto g = got.to_vector<double>();
  auto w = flat(want);
  if (g.size() != w.size()) return ::testing::AssertionFailure() << what << ": size " << g.size() << " vs " << w.size();
  double scale = 0;
  for (double x : w)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (!(std::abs(g[i] - w[i]) <= rtol * scale))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: got " << g[i] << ", want " << w[i] << " (scale " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dlmt
