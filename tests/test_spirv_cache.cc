// The SPIR-V disk cache (core/backends/vulkan/spirv_cache.h): a shader compiled once is loaded
// afterwards with the same words; a damaged entry, an entry of another text, a cache that is off,
// shared with other users or impossible to create never change a result, only whether glslang runs.
// glslang only: no Vulkan device is needed.
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "core/backends/vulkan/spirv_cache.h"
#include "core/backends/vulkan/vk_pipeline.h"
#include "tests/helpers.h"

using namespace jx;
using jxt::ScopedEnv;
namespace fs = std::filesystem;

namespace {

std::string shader(float k) {
  return "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float d[]; } b;\n"
         "void main() { b.d[gl_GlobalInvocationID.x] *= " +
         std::to_string(k) + "; }\n";
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("jx-spirv-" + std::to_string(getpid()) + "-" + std::to_string(n++));
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
  static inline int n = 0;
};

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".spv") out.push_back(e.path());
  return out;
}

}  // namespace

TEST(SpirvCache, SecondCompileLoadsTheSameWords) {
  TempDir d;
  ScopedEnv env("JX_VULKAN_CACHE", d.path.c_str());
  EXPECT_EQ(vk::spirv_cache_dir(), d.path.string());
  const auto s0 = vk::spirv_cache_stats();
  const auto first = vk::compile_glsl(shader(2.5f), "scale");
  const auto s1 = vk::spirv_cache_stats();
  EXPECT_EQ(s1.compiled, s0.compiled + 1);
  EXPECT_EQ(s1.loaded, s0.loaded);
  ASSERT_EQ(entries(d.path).size(), 1u);
  const auto again = vk::compile_glsl(shader(2.5f), "scale");
  const auto s2 = vk::spirv_cache_stats();
  EXPECT_EQ(again, first);
  EXPECT_EQ(s2.compiled, s1.compiled);
  EXPECT_EQ(s2.loaded, s1.loaded + 1);
  // another text: another entry
  EXPECT_NE(vk::compile_glsl(shader(3.5f), "scale"), first);
  EXPECT_EQ(entries(d.path).size(), 2u);
  // the GLSL's errors are still glslang's, named
  EXPECT_THROW(
      {
        try {
          vk::compile_glsl("#version 450\nvoid main() { undefined_name = 1; }\n", "broken");
        } catch (const BackendError& e) {
          EXPECT_NE(std::string(e.what()).find("GLSL for broken does not compile"), std::string::npos);
          throw;
        }
      },
      BackendError);
}

TEST(SpirvCache, DamagedOrForeignEntriesAreCompiledAgainAndRewritten) {
  TempDir d;
  ScopedEnv env("JX_VULKAN_CACHE", d.path.c_str());
  const auto want = vk::compile_glsl(shader(1.5f), "scale");
  ASSERT_EQ(entries(d.path).size(), 1u);
  const fs::path entry = entries(d.path)[0];
  const auto size = fs::file_size(entry);
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) {  // one flipped byte in the words
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size) - 20);
      f.put('\x5a');
    } else if (damage == 1) {  // truncated
      fs::resize_file(entry, size / 2);
    } else {  // a whole, valid entry of another text under this text's name
      TempDir other;
      ScopedEnv env2("JX_VULKAN_CACHE", other.path.c_str());
      vk::compile_glsl(shader(9.5f), "scale");
      fs::copy_file(entries(other.path)[0], entry, fs::copy_options::overwrite_existing);
    }
    const auto s0 = vk::spirv_cache_stats();
    EXPECT_EQ(vk::compile_glsl(shader(1.5f), "scale"), want) << "damage " << damage;
    const auto s1 = vk::spirv_cache_stats();
    EXPECT_EQ(s1.rejected, s0.rejected + 1) << "damage " << damage;
    EXPECT_EQ(s1.compiled, s0.compiled + 1) << "damage " << damage;
    EXPECT_EQ(fs::file_size(entry), size) << "rewritten whole";
    EXPECT_EQ(vk::compile_glsl(shader(1.5f), "scale"), want);
    EXPECT_EQ(vk::spirv_cache_stats().loaded, s1.loaded + 1) << "the rewritten entry is used";
  }
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().extension(), ".spv") << "no temporary file left: " << e.path();
}

TEST(SpirvCache, OffSharedOrImpossibleFoldersAreNotUsed) {
  {
    ScopedEnv env("JX_VULKAN_CACHE", "off");
    EXPECT_EQ(vk::spirv_cache_dir(), "");
    const auto s0 = vk::spirv_cache_stats();
    vk::compile_glsl(shader(4.5f), "scale");
    EXPECT_EQ(vk::spirv_cache_stats().compiled, s0.compiled + 1);
  }
  {  // writable by others: code from it would reach the driver
    TempDir d;
    fs::create_directories(d.path);
    fs::permissions(d.path, fs::perms::all);
    ScopedEnv env("JX_VULKAN_CACHE", d.path.c_str());
    EXPECT_EQ(vk::spirv_cache_dir(), "");
    const auto a = vk::compile_glsl(shader(5.5f), "scale");
    EXPECT_TRUE(entries(d.path).empty());
    EXPECT_EQ(vk::compile_glsl(shader(5.5f), "scale"), a);
  }
  {  // a folder under a regular file cannot exist
    TempDir d;
    fs::create_directories(d.path);
    std::ofstream(d.path / "file") << "x";
    const std::string under = (d.path / "file" / "cache").string();
    ScopedEnv env("JX_VULKAN_CACHE", under.c_str());
    EXPECT_EQ(vk::spirv_cache_dir(), "");
    EXPECT_FALSE(vk::compile_glsl(shader(6.5f), "scale").empty());
  }
}
