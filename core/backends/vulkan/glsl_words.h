#pragma once
// The words scan shaders are made of (glsl_scan.cc's loop shader, glsl_assoc_blocked.cc's blocked
// and glsl_assoc_scan.cc's Kogge-Stone shaders). Packed buffers hold raw words: float32/int32 one
// word per element, float64 two, bool one byte (the slot layout, so slots copy in and out
// unchanged); workgroup memory is one array of words, `sm`, reached only through sm_ld/sm_st,
// holding bools one per word.
#include <cstdint>
#include <string>

#include "core/kernel/kernel.h"

namespace jx::vk {

std::int64_t align4(std::int64_t w);
// Element i of a packed buffer `buf` whose value starts at word `base` (i: an int expression).
std::string gread(const char* buf, DType d, std::int64_t base, const std::string& i);
std::string gwrite(DType d, std::int64_t base, const std::string& i, const std::string& v, const char* buf = "gout");
std::int64_t shared_words(const AVal& a);
// Element i of a value in workgroup memory whose words start at word `base` (an expression);
// `mem` names another word array with the same accessors (`sc`: a workgroup's global scratch).
std::string sread(DType d, const std::string& base, const std::string& i, const char* mem = "sm");
std::string swrite(DType d, const std::string& base, const std::string& i, const std::string& v,
                   const char* mem = "sm");
// The declaration of `words` words of workgroup memory and its accessors (checked: an access
// outside [0, words) reads 0xffffffff and writes nothing).
std::string shared_decl(std::int64_t words, bool checked);
// Loop iterations of a kernel's reduction (every nesting level's).
std::int64_t reduce_iterations(const Kernel& k);

}  // namespace jx::vk
