// Every committed fuzz input runs through its target in the ordinary suites (release, native,
// vulkan, ASan+UBSan): the seed corpora and the regressions (inputs that once crashed or
// mismatched, kept under tests/fuzz/regressions/<target>/ with a note of what they found).
#include <filesystem>
#include <fstream>
#include <iterator>

#include <cmath>
#include <fmt/format.h>
#include <unistd.h>

#include "core/instrument/faults.h"
#include "core/jx.h"
#include "core/text/load.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/helpers.h"

namespace fs = std::filesystem;

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> v;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(JX_SOURCE_DIR) / "tests/fuzz" / kind / target;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() != ".md") v.push_back(e.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

void replay(const std::string& target, Target fn, std::size_t min_inputs) {
  const auto files = inputs(target);
  EXPECT_GE(files.size(), min_inputs) << "committed inputs for " << target;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(f.string());
    EXPECT_EQ(fn(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);  // a finding aborts
  }
}

}  // namespace

TEST(FuzzReplay, ScenarioFile) { replay("scenario_file", jx::fuzz::scenario_file, 10); }
TEST(FuzzReplay, DlmInput) { replay("dlm_input", jx::fuzz::dlm_input, 5); }
TEST(FuzzReplay, Differential) { replay("differential", jx::fuzz::differential, 10); }
TEST(FuzzReplay, JaxprText) { replay("jaxpr_text", jx::fuzz::jaxpr_text, 20); }

// A differential finding is written as a program case before the target aborts: a planted wrong
// tanh in the native renderer (fault native_wrong_tanh) on a float32 jit program of one tanh.
// JX_FINDING_OUT keeps the file for tests/fuzz_finding_reduce.sh, which reduces it.
TEST(FuzzFinding, MismatchIsWrittenAsAProgramCase) {
  ASSERT_TRUE(jx::backend_available("native")) << "the planted fault needs the native backend (a C compiler)";
  const char* keep = std::getenv("JX_FINDING_OUT");
  const fs::path dir =
      keep && *keep ? fs::path(keep) : fs::temp_directory_path() / fmt::format("jx-finding-{}", ::getpid());
  fs::remove_all(dir);
  // float32, jit, rank 1 of 3, one input, one op: tanh (kind 7)
  const std::vector<std::uint8_t> bytes = {1, 1, 1, 2, 0, 0, 0, 7, 0, 0, 0, 0};
  EXPECT_EQ(jx::fuzz::describe_program(bytes.data(), bytes.size()),
            "jit float32 over 1 input(s) of float32[3]: tanh(r0,r0,r0;axis 0)");
  ::setenv("JX_FUZZ_PROGRAMS", dir.c_str(), 1);
  EXPECT_DEATH(
      {
        jx::faults::arm("native_wrong_tanh", 0, -1);
        jx::fuzz::differential(bytes.data(), bytes.size());
      },
      "FUZZ FINDING: differential: native disagrees with cpu on jit float32");
  ::unsetenv("JX_FUZZ_PROGRAMS");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const auto c = jx::text::read_case_file(files[0]);
  EXPECT_NE(c.jaxpr.find("tanh"), std::string::npos) << c.jaxpr;
  ASSERT_EQ(c.inputs.size(), 1u);
  ASSERT_TRUE(c.outputs.has_value());
  EXPECT_NEAR(c.outputs->at(0).data.at(1), std::tanh(c.inputs[0].data.at(1)), 1e-6);  // the oracle's outputs
  std::ifstream in(files[0]);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["reduce"]["backend"], "native");
  EXPECT_EQ(j["reduce"]["transform"], "jit");
  if (!(keep && *keep)) fs::remove_all(dir);
}
