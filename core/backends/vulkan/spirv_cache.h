#pragma once
// SPIR-V of generated GLSL kept on disk across processes: a process that meets a shader some
// earlier process compiled loads its SPIR-V instead of running glslang (~4 ms a shader, and
// ~160 ms to build glslang's built-in tables in each process that compiles at all).
//
// The folder: JX_VULKAN_CACHE, else $XDG_CACHE_HOME/jxlab/vulkan, else $HOME/.cache/jxlab/vulkan;
// JX_VULKAN_CACHE=off turns the cache off. A folder that cannot be made, that another user owns,
// or that others may write to is not used (code from it would reach the driver).
//
// An entry is one file named by a hash of (glslang's version, the compile options, the GLSL text)
// holding the whole GLSL text, the SPIR-V words and a checksum of both. It is used only when the
// text equals the shader's, the checksum holds and the words start with SPIR-V's magic number;
// otherwise it is compiled again and the entry rewritten. Entries are written to a temporary file
// and renamed into place, so a reader sees a whole entry or none.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jx::vk {

struct SpirvCacheStats {
  std::uint64_t compiled = 0;  // shaders compiled by glslang in this process
  std::uint64_t loaded = 0;    // shaders whose SPIR-V came from the disk cache
  std::uint64_t rejected = 0;  // entries found unusable (damaged, another text) and rewritten
};

// The cache folder in use ("" when the cache is off or its folder is unusable).
std::string spirv_cache_dir();
std::optional<std::vector<std::uint32_t>> spirv_cache_load(const std::string& key_text, const std::string& glsl);
void spirv_cache_store(const std::string& key_text, const std::string& glsl, const std::vector<std::uint32_t>& spirv);
void spirv_cache_count_compile();
SpirvCacheStats spirv_cache_stats();

}  // namespace jx::vk
