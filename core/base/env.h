#pragma once
// Settings read from the environment.
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace jx {

// Whether the variable `name` is set to exactly "0": the way every on-by-default setting is
// turned off (JX_NATIVE_OPENMP=0, JX_VK_F32_ACC=0, JX_VK_COOP_PREFETCH=0, ...).
inline bool env_is_zero(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string_view(e) == "0";
}

// Whether `name` is set, non-empty and not "0": the way every off-by-default diagnosis is
// turned on (JX_VK_TIMING=1, JX_VK_TIMING_BARRIERS=1, JX_VULKAN_STAGED_READS=1).
inline bool env_is_on(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::string_view(e) != "0";
}

// The whole number in `name`, or `fallback` where it is unset or empty (JX_VK_COOP_CHUNK,
// JX_VK_SPLIT_TERMS, ...).
inline std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoll(e) : fallback;
}

}  // namespace jx
