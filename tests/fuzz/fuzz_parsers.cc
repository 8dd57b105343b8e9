// Fuzz targets for the two input readers: scenario files (parser + validator) and `jxlab dlm`
// inputs (JSON or CSV, then a small fit when the input is valid). Only ScenarioError / jx::Error
// may come out: anything else (nlohmann type errors, std::out_of_range, ...) is a finding.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/jx.h"
#include "scenarios/scenario.h"
#include "tests/fuzz/fuzz_targets.h"
#include "workloads/dlm/dlm_io.h"
#include "workloads/dlm/dlm_stream.h"

#include <filesystem>
#include <unistd.h>

namespace jx::fuzz {

void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {
template <class F>
void only_clear_errors(const char* target, F&& f) {
  try {
    f();
  } catch (const lab::ScenarioError&) {
  } catch (const Error&) {
  } catch (const std::exception& e) {
    finding(std::string(target) + ": unexpected exception (not a jx error naming the problem): " + e.what());
  }
}
}  // namespace

int scenario_file(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // the file name must match the id: take it from the text when it parses, so mutations reach
  // the validator beyond the id check
  std::string id = "fuzz";
  try {
    auto j = nlohmann::json::parse(text);
    if (j.is_object() && j.contains("id") && j["id"].is_string()) id = j["id"].get<std::string>();
  } catch (const std::exception&) {}
  if (id.find('/') != std::string::npos || id.empty()) id = "fuzz";
  only_clear_errors("scenario_file", [&] {
    lab::Scenario s = lab::parse_scenario(text, "fuzz/" + id + ".json");
    if (s.id.empty() || s.cases.empty() || s.backends.empty())
      finding("scenario_file: a scenario without id, cases or backends was accepted");
  });
  return 0;
}

int dlm_input(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  only_clear_errors("dlm_input", [&] {
    dlm::Input in = dlm::parse_input(text, "fuzz-input");
    if (in.s.empty()) in.s = {1.0};  // CSV: the CLI's --s/--w
    if (in.w.empty()) in.w.assign(static_cast<std::size_t>(in.options.order + 1), 0.5);
    dlm::validate(in, "fuzz-input");
    if (in.y.size() > 64 || in.options.order > 3) return;  // the reader is the target; keep fits small
    DefaultDeviceScope cpu("cpu");
    Array y = np::array(in.y, std::nullopt, DType::float64);
    Array s = in.s.size() == 1 ? np::scalar(in.s[0], DType::float64) : np::array(in.s, std::nullopt, DType::float64);
    std::optional<Array> X;
    if (!in.X.empty()) X = dlm::matrix(in.X);
    const dlm::Fit f = dlm::fit(y, s, in.w, in.options, X);
    (void)dlm::to_json(f).dump();
    // the CLI's path: the streamed fit in chunks of 5, written as npz and JSON, gives fit's lik
    if (in.options.algorithm == dlm::Algorithm::scan)
      for (auto format : {dlm::OutputFormat::npz, dlm::OutputFormat::json}) {
        const std::string path =
            (std::filesystem::temp_directory_path() / fmt::format("jx-fuzz-dlm-{}.out", getpid())).string();
        dlm::ResultWriter w(path, format, false);
        const dlm::StreamedFit sf = dlm::fit_streamed(y, s, in.w, in.options, X, w, 5);
        w.commit(sf.fields);
        std::filesystem::remove(path);
        const bool both_nan = std::isnan(sf.lik) && std::isnan(f.lik);
        if (!both_nan && !(std::abs(sf.lik - f.lik) <= 1e-9 * std::max(1.0, std::abs(f.lik))))
          finding(fmt::format("dlm_input: the streamed fit's -2 log L {} differs from fit's {}", sf.lik, f.lik));
      }
    // accepted input of moderate size gives numbers, never NaN or inf (the reader refuses
    // infinities and all-missing series; leading missing values start from a diffuse prior)
    auto moderate = [](const std::vector<double>& v, double lo, double hi) {
      for (double x : v)
        if (!std::isnan(x) && (std::abs(x) > hi || (x != 0 && std::abs(x) < lo))) return false;
      return true;
    };
    std::vector<double> xs;
    for (const auto& r : in.X) xs.insert(xs.end(), r.begin(), r.end());
    if (moderate(in.y, 1e-3, 1e4) && moderate(in.s, 1e-2, 1e4) && moderate(in.w, 1e-2, 1e3) &&
        moderate(xs, 1e-3, 1e3) && in.options.arphi.empty() && in.options.ns <= 24) {
      if (!std::isfinite(f.lik)) finding(fmt::format("dlm_input: an accepted input gave -2 log L = {}", f.lik));
      for (double v : f.x.to_vector<double>())
        if (!std::isfinite(v)) finding("dlm_input: an accepted input gave a non-finite smoothed state");
    }
  });
  return 0;
}

}  // namespace jx::fuzz
