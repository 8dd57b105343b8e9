#include "core/backends/vulkan/spirv_cache.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/hash.h"
#include "core/instrument/debug.h"

namespace fs = std::filesystem;

namespace jx::vk {
namespace {

constexpr char kMagic[8] = {'J', 'X', 'S', 'P', 'I', 'R', 'V', '1'};
constexpr std::uint32_t kSpirvMagic = 0x07230203;

std::atomic<std::uint64_t> g_compiled{0}, g_loaded{0}, g_rejected{0};

// Ours alone: made if missing (mode 0700), owned by this user, writable by no one else.
bool private_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  struct stat st {};
  if (ec || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid != getuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    debug_log(1, fmt::format("vulkan: not using the SPIR-V cache {}: another user may write to it", dir.string()));
    return false;
  }
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

std::string pick_dir() {
  const char* e = std::getenv("JX_VULKAN_CACHE");
  fs::path want;
  if (e && std::string_view(e) == "off") return "";
  if (e && *e)
    want = e;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    want = fs::path(x) / "jxlab" / "vulkan";
  else if (const char* h = std::getenv("HOME"); h && *h)
    want = fs::path(h) / ".cache" / "jxlab" / "vulkan";
  if (want.empty() || !private_folder(want)) return "";
  return want.string();
}

fs::path entry_path(const std::string& dir, const std::string& key_text, const std::string& glsl) {
  return fs::path(dir) / fmt::format("{:016x}.spv", fnv1a(glsl, fnv1a(key_text)));
}

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
bool get_u64(std::string_view& in, std::uint64_t& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}

// magic | key length, key | text length, text | word count, words | FNV-1a of all before it
std::string encode(const std::string& key_text, const std::string& glsl, const std::vector<std::uint32_t>& spirv) {
  std::string out(kMagic, sizeof kMagic);
  put_u64(out, key_text.size());
  out += key_text;
  put_u64(out, glsl.size());
  out += glsl;
  put_u64(out, spirv.size());
  out.append(reinterpret_cast<const char*>(spirv.data()), spirv.size() * sizeof(std::uint32_t));
  put_u64(out, fnv1a(out));
  return out;
}

// The words of an entry for exactly this key and text; nothing for any other content.
std::optional<std::vector<std::uint32_t>> decode(std::string_view in, const std::string& key_text,
                                                 const std::string& glsl) {
  std::uint64_t sum = 0, n = 0;
  if (in.size() < sizeof kMagic + sizeof sum || in.substr(0, sizeof kMagic) != std::string_view(kMagic, sizeof kMagic))
    return std::nullopt;
  std::string_view body = in.substr(0, in.size() - sizeof sum), tail = in.substr(body.size());
  if (!get_u64(tail, sum) || sum != fnv1a(body)) return std::nullopt;
  body.remove_prefix(sizeof kMagic);
  for (const std::string* want : {&key_text, &glsl}) {
    if (!get_u64(body, n) || n != want->size() || body.substr(0, n) != *want) return std::nullopt;
    body.remove_prefix(n);
  }
  if (!get_u64(body, n) || n == 0 || body.size() != n * sizeof(std::uint32_t)) return std::nullopt;
  std::vector<std::uint32_t> words(n);
  std::memcpy(words.data(), body.data(), body.size());
  if (words[0] != kSpirvMagic) return std::nullopt;
  return words;
}

}  // namespace

std::string spirv_cache_dir() {
  // read once per value of JX_VULKAN_CACHE (tests switch it within a process)
  static std::mutex mu;
  static std::string env_seen = "\x01", dir;
  std::lock_guard lock(mu);
  const char* e = std::getenv("JX_VULKAN_CACHE");
  const std::string env = e ? e : "";
  if (env != env_seen) {
    dir = pick_dir();
    env_seen = env;
  }
  return dir;
}

std::optional<std::vector<std::uint32_t>> spirv_cache_load(const std::string& key_text, const std::string& glsl) {
  const std::string dir = spirv_cache_dir();
  if (dir.empty()) return std::nullopt;
  const fs::path p = entry_path(dir, key_text, glsl);
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  auto words = decode(ss.str(), key_text, glsl);
  if (!words) {
    ++g_rejected;
    debug_log(1, fmt::format("vulkan: SPIR-V cache entry {} is unusable; compiling again", p.string()));
    return std::nullopt;
  }
  ++g_loaded;
  return words;
}

void spirv_cache_store(const std::string& key_text, const std::string& glsl, const std::vector<std::uint32_t>& spirv) {
  const std::string dir = spirv_cache_dir();
  if (dir.empty() || spirv.empty()) return;
  const fs::path p = entry_path(dir, key_text, glsl);
  static std::atomic<std::uint64_t> serial{0};  // threads of one process write distinct files
  const fs::path tmp = p.string() + fmt::format(".{}.{}.tmp", getpid(), serial++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const std::string bytes = encode(key_text, glsl, spirv);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);  // a full disk: the shader works, it is just not kept
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);  // atomic: a reader sees the old entry, the new one or none
  if (ec) fs::remove(tmp, ec);
}

void spirv_cache_count_compile() { ++g_compiled; }

SpirvCacheStats spirv_cache_stats() { return {g_compiled.load(), g_loaded.load(), g_rejected.load()}; }

}  // namespace jx::vk
