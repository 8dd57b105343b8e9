// Every committed fuzz input runs through its target in the ordinary suites (release, native,
// vulkan, ASan+UBSan): the seed corpora and the regressions (inputs that once crashed or
// mismatched, kept under tests/fuzz/regressions/<target>/ with a note of what they found).
#include <filesystem>
#include <fstream>
#include <iterator>

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
