// The streamed fit and the result writer (issue 33 item 4): chunked fits equal dlm::fit, and the
// writer refuses bad destinations and leaves nothing behind.
#include <filesystem>
#include <unistd.h>

#include "tests/dlm_test_util.h"
#include "tests/npz_reader.h"
#include "tests/vulkan_helpers.h"  // under JX_VULKAN_VALIDATION=1 a validation message fails its test
#include "workloads/dlm/dlm.h"
#include "workloads/dlm/dlm_io.h"
#include "workloads/dlm/dlm_stream.h"

using namespace jx;
using json = nlohmann::json;
using dlmt::close_scaled;
using dlmt::flat;
using dlmt::load;

// The streamed fit (chunks, checkpoints, the last chunk padded, outputs written as they come)
// gives dlm::fit's result: the Nile series with gaps, a seasonal model with covariates, chunks of
// 7, 64 and one chunk, every chunk's forward results kept for the backward sweep or (kept
// bytes 0) only the last one's, the others run again; JSON and npz (written in place) hold the
// same values.
namespace {
double json_scale(const json& j) {
  double s = 0;
  for (double x : flat(j))
    if (std::isfinite(x)) s = std::max(s, std::abs(x));
  return s;
}
}  // namespace

TEST(DlmStream, ChunkedFitEqualsFit) {
  json in = load("niledemo-in.json");
  std::vector<double> y = flat(in["y"]);
  for (std::size_t t : {3u, 4u, 40u, 41u, 42u, 99u}) y[t] = NAN;
  const std::int64_t n = static_cast<std::int64_t>(y.size());
  std::vector<double> X;
  for (std::int64_t t = 0; t < n; ++t) X.insert(X.end(), {std::sin(t / 5.0), std::cos(t / 3.0)});
  dlm::Options seasonal;
  seasonal.trig = 1;
  seasonal.ns = 4;
  struct Case {
    const char* name;
    dlm::Options o;
    std::optional<Array> X;
    std::vector<double> w;
  };
  const std::vector<Case> cases{{"nile", {}, std::nullopt, flat(in["w"])},
                                {"trig+X", seasonal, np::array(X, Shape{n, 2}, DType::float64), {10, 1, 2, 2}}};
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("jx-dlm-stream-{}", getpid());
  std::filesystem::create_directories(dir);
  for (const Case& c : cases) {
    const Array ya = np::array(y, std::nullopt, DType::float64), s = np::scalar(in["s"].get<double>(), DType::float64);
    const json want = dlm::to_json(dlm::fit(ya, s, c.w, c.o, c.X));
    for (auto [chunk, kept] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {7, dlm::kStreamKeptBytes}, {7, 0}, {64, dlm::kStreamKeptBytes}, {dlm::kStreamChunk, 0}}) {
      const std::string where = fmt::format("{} chunk {} kept {}", c.name, chunk, kept),
                        path = (dir / "fit.json").string();
      dlm::ResultWriter w(path, dlm::OutputFormat::json, false);
      dlm::StreamedFit f = dlm::fit_streamed(ya, s, c.w, c.o, c.X, w, chunk, kept);
      w.commit(f.fields);
      std::ifstream is(path);
      const json got = json::parse(is);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (const auto& [k, v] : want.items()) {
        ASSERT_TRUE(got.contains(k)) << where << ": " << k;
        if (v.is_string())
          EXPECT_EQ(got[k], v) << where << ": " << k;
        else
          EXPECT_TRUE(close_scaled(np::array(flat(got[k]), std::nullopt, DType::float64), v, 1e-12, where + ": " + k))
              << "scale " << json_scale(v);
      }
      EXPECT_NEAR(f.lik, want["lik"].get<double>(), 1e-12 * std::abs(want["lik"].get<double>())) << where;
      // the same fit to .npz: its arrays written in place (steps-last ones column-major), every
      // CRC right, every value the JSON's
      const std::string npz = (dir / "fit.npz").string();
      dlm::ResultWriter wz(npz, dlm::OutputFormat::npz, false);
      dlm::StreamedFit fz = dlm::fit_streamed(ya, s, c.w, c.o, c.X, wz, chunk, kept);
      wz.commit(fz.fields);
      const auto entries = npzt::read_npz(npz);
      int compared = 0;
      for (const auto& [k, v] : got.items()) {
        if (v.is_string()) continue;
        ASSERT_TRUE(entries.count(k)) << where << ": npz lacks " << k;
        const std::vector<double> want_values = flat(v);
        if (entries.at(k).descr != "<f8") continue;  // nobs (<i8)
        const std::vector<double>& have = entries.at(k).values;
        ASSERT_EQ(have.size(), want_values.size()) << where << ": npz " << k;
        ++compared;
        for (std::size_t i = 0; i < have.size(); ++i)
          ASSERT_TRUE(have[i] == want_values[i] || (std::isnan(have[i]) && std::isnan(want_values[i])))
              << where << ": npz " << k << "[" << i << "] " << have[i] << " vs JSON " << want_values[i];
      }
      EXPECT_GE(compared, 24) << where;  // the 19 arrays of fields(Fit), the summary's 5 numbers, XX
    }
  }
  std::filesystem::remove_all(dir);
}

// The first pass stops once P = L₁ᵀ⋯L_tᵀ is zero (flushed below the smallest normal): on a long
// local-linear-trend series it runs a few chunks, not all of them, and the fit is still
// dlm::fit's (which sums over every step), in float64 and float32.
TEST(DlmStream, FirstPassStopsWhereTheStartIsForgotten) {
  const std::int64_t n = 4000, chunk = 16;
  std::vector<double> y(static_cast<std::size_t>(n));
  double level = 1000, slope = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    slope += 0.5 * std::sin(0.7 * static_cast<double>(t));
    level += slope + 40 * std::cos(1.3 * static_cast<double>(t));
    y[static_cast<std::size_t>(t)] = t % 97 == 5 ? NAN : level + 120 * std::sin(2.1 * static_cast<double>(t));
  }
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("jx-dlm-first-{}", getpid());
  std::filesystem::create_directories(dir);
  for (DType d : {DType::float64, DType::float32}) {
    const Array ya = np::array(y, std::nullopt, d), s = np::scalar(10.0, d);
    const dlm::Fit want = dlm::fit(ya, s, {40, 40}, {});
    dlm::ResultWriter w((dir / "fit.json").string(), dlm::OutputFormat::json, false);
    const dlm::StreamedFit f = dlm::fit_streamed(ya, s, {40, 40}, {}, std::nullopt, w, chunk);
    w.commit(f.fields);
    // |P| shrinks ~0.37× a step: ~700 steps to fall below float64's smallest normal, ~90 float32's
    EXPECT_GE(f.first_pass_steps, d == DType::float64 ? 512 : 64);
    EXPECT_LE(f.first_pass_steps, n / 2) << "the first pass ran " << f.first_pass_steps << " of " << n << " steps";
    std::ifstream is(dir / "fit.json");
    const json got = json::parse(is);
    // float32: C0 = 100(C − C N C) cancels (C ≈ 2.5e5 against a result ≈ 1.5e4), so rounding
    // differences of the jitted chunks and the whole scan grow to ~1e-4 of it
    const double tol = d == DType::float64 ? 1e-12 : 1e-3;
    EXPECT_NEAR(f.lik, want.lik, tol * std::abs(want.lik));
    const json wj = dlm::to_json(want);
    for (const char* k : {"x0", "C0", "x", "C", "xf", "Cf", "v"})
      EXPECT_TRUE(close_scaled(np::array(flat(got[k]), std::nullopt, DType::float64), wj[k], tol, k))
          << (d == DType::float64 ? "float64" : "float32");
  }
  std::filesystem::remove_all(dir);
}

// A stale temporary file of an earlier run, larger than the new output, leaves none of its bytes
// behind: the npz written over it ends with its end-of-central-directory record, reads back, and
// is as long as its content.
TEST(DlmStream, NpzOverAStaleTemporaryFileEndsWithItsContent) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("jx-dlm-stale-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "fit.npz").string();
  {
    std::ofstream junk(path + ".tmp", std::ios::binary);
    junk << std::string(std::size_t{4} << 20, 'x');
  }
  json in = load("niledemo-in.json");
  const Array ya = np::array(flat(in["y"]), std::nullopt, DType::float64),
              s = np::scalar(in["s"].get<double>(), DType::float64);
  dlm::ResultWriter w(path, dlm::OutputFormat::npz, false);
  const dlm::StreamedFit f = dlm::fit_streamed(ya, s, flat(in["w"]), {}, std::nullopt, w);
  w.commit(f.fields);
  std::ifstream is(path, std::ios::binary);
  const std::string z((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  ASSERT_GT(z.size(), 22u);
  EXPECT_LT(z.size(), std::size_t{1} << 20);
  const std::size_t eocd = z.size() - 22;  // no archive comment
  EXPECT_EQ(z.substr(eocd, 4), std::string("PK\x05\x06", 4));
  const auto entries = npzt::read_npz(path);
  EXPECT_EQ(entries.at("x").values.size(), 2u * 100u);  // the Nile series: m = 2, 100 steps
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(DlmStream, WriterRefusesBadDestinationsAndLeavesNothing) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("jx-dlm-writer-{}", getpid());
  std::filesystem::create_directories(dir);
  EXPECT_THROW(dlm::ResultWriter(dir.string(), dlm::OutputFormat::json, false), Error);  // a folder
  EXPECT_THROW(dlm::ResultWriter((dir / "no/such.json").string(), dlm::OutputFormat::json, false), Error);
  {
    dlm::ResultWriter w((dir / "a.npz").string(), dlm::OutputFormat::npz, false);
    EXPECT_TRUE(std::filesystem::exists(dir / "a.npz.tmp"));  // writability is checked at once
  }                                                           // never committed: nothing left
  EXPECT_FALSE(std::filesystem::exists(dir / "a.npz.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "a.npz"));
  EXPECT_EQ(dlm::output_format("", "x.npz"), dlm::OutputFormat::npz);
  EXPECT_EQ(dlm::output_format("", "x.json"), dlm::OutputFormat::json);
  EXPECT_EQ(dlm::output_format("npz", "x.json"), dlm::OutputFormat::npz);
  EXPECT_THROW(dlm::output_format("csv", "x"), Error);
  std::filesystem::remove_all(dir);
}
