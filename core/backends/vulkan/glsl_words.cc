#include "core/backends/vulkan/glsl_words.h"

#include <fmt/format.h>

namespace jx::vk {

// Packed buffers hold raw words: float32/int32 one word per element, float64 two, bool one byte
// (the slot layout, so slots copy in and out unchanged). Shared memory holds bools one per word.
std::int64_t align4(std::int64_t w) { return (w + 3) / 4 * 4; }

std::string gread(const char* buf, DType d, std::int64_t base, const std::string& i) {
  switch (d) {
    case DType::float32: return fmt::format("uintBitsToFloat({}.d[{} + ({})])", buf, base, i);
    case DType::int32: return fmt::format("int({}.d[{} + ({})])", buf, base, i);
    case DType::float64:
      return fmt::format("packDouble2x32(uvec2({0}.d[{1} + 2 * ({2})], {0}.d[{1} + 2 * ({2}) + 1]))", buf, base, i);
    case DType::bool_:
      return fmt::format("((({0}.d[({1} + ({2})) >> 2] >> ((({1} + ({2})) & 3) * 8)) & 0xffu) != 0u)", buf, base * 4,
                         i);
  }
  return "0";
}
std::string gwrite(DType d, std::int64_t base, const std::string& i, const std::string& v, const char* buf) {
  switch (d) {
    case DType::float32: return fmt::format("{}.d[{} + ({})] = floatBitsToUint({});\n", buf, base, i, v);
    case DType::int32: return fmt::format("{}.d[{} + ({})] = uint({});\n", buf, base, i, v);
    case DType::float64:
      return fmt::format(
          "{{ uvec2 u_ = unpackDouble2x32({2}); {3}.d[{0} + 2 * ({1})] = u_.x; {3}.d[{0} + 2 * ({1}) + 1] = u_.y; }}\n",
          base, i, v, buf);
    case DType::bool_:
      return fmt::format(
          "{{ int b_ = {0} + ({1}); atomicAnd({3}.d[b_ >> 2], ~(0xffu << ((b_ & 3) * 8))); atomicOr({3}.d[b_ >> 2], "
          "uint({2}) << ((b_ & 3) * 8)); }}\n",
          base * 4, i, v, buf);
  }
  return "";
}
std::int64_t shared_words(const AVal& a) { return a.size() * (a.dtype == DType::float64 ? 2 : 1); }
// Workgroup memory is one array of words, `sm`, read and written only through sm_ld/sm_st
// (shared_decl). Element i of a value whose words start at word `base` (an expression) is at
// base + i, or base + 2i (two words) for float64: `base` is in words, `i` in elements.
std::string sread(DType d, const std::string& base, const std::string& i, const char* mem) {
  switch (d) {
    case DType::float32: return fmt::format("uintBitsToFloat({}_ld({} + ({})))", mem, base, i);
    case DType::int32: return fmt::format("int({}_ld({} + ({})))", mem, base, i);
    case DType::float64:
      return fmt::format("packDouble2x32(uvec2({2}_ld({0} + 2 * ({1})), {2}_ld({0} + 2 * ({1}) + 1)))", base, i, mem);
    case DType::bool_: return fmt::format("({}_ld({} + ({})) != 0u)", mem, base, i);
  }
  return "0";
}
std::string swrite(DType d, const std::string& base, const std::string& i, const std::string& v, const char* mem) {
  switch (d) {
    case DType::float32: return fmt::format("{}_st({} + ({}), floatBitsToUint({}));\n", mem, base, i, v);
    case DType::int32:
    case DType::bool_: return fmt::format("{}_st({} + ({}), uint({}));\n", mem, base, i, v);
    case DType::float64:
      return fmt::format(
          "{{ uvec2 u_ = unpackDouble2x32({2}); {3}_st({0} + 2 * ({1}), u_.x); {3}_st({0} + 2 * ({1}) + 1, u_.y); }}\n",
          base, i, v, mem);
  }
  return "";
}

// The declaration of `words` words of workgroup memory and its two accessors. Checked
// (ScanLimits::checked_shared): a word outside [0, words) reads as 0xffffffff (a NaN in either
// float type, -1 as int32) and is never written, so an addressing error gives wrong values on
// every device. Unchecked, such an access is undefined: the H100 drops the write and reads
// garbage, while llvmpipe's slack after the array made the same code give right answers.
std::string shared_decl(std::int64_t words, bool checked) {
  if (!checked)
    return fmt::format(
        "shared uint sm[{}];\nuint sm_ld(int i) {{ return sm[i]; }}\nvoid sm_st(int i, uint v) {{ sm[i] = v; }}\n",
        words);
  return fmt::format(
      "shared uint sm[{0}];\nuint sm_ld(int i) {{ return uint(i) < {0}u ? sm[i] : 0xffffffffu; }}\n"
      "void sm_st(int i, uint v) {{ if (uint(i) < {0}u) sm[i] = v; }}\n",
      words);
}

std::int64_t reduce_iterations(const Kernel& k) {
  std::int64_t r = 0, p = 1;
  for (auto ax : k.reduce_axes) r += (p *= k.space[ax]);  // every nesting level's iterations
  return r;
}

}  // namespace jx::vk
