// An associative scan as one C function that splits the positions into chunks scanned on
// OpenMP threads (the three-pass blocked scan):
//   1. each chunk c folds its own positions: y_i = y_{i-1} ∘ x_i from y_lo = x_lo (parallel);
//   2. the prefixes of whole chunks, in order: P_0 = y(end of chunk 0), P_c = P_{c-1} ∘ y(end of c);
//   3. every later chunk's positions take the earlier chunks' prefix: y_i = P_{c-1} ∘ y_i (parallel).
// Associativity makes y_i = x_0 ∘ … ∘ x_i. About 2N combines for the fold's N, so the scan gains
// on more than two threads; the chunk count is fixed at render time (kAssocChunks), so results do
// not depend on how many threads run it.
#include <fmt/format.h>

#include "core/backends/native/c_renderer.h"
#include "core/base/errors.h"

namespace jx::native {

namespace {

// Subnormal results flushed to zero and subnormal operands read as zero (x86: MXCSR FTZ | DAZ;
// aarch64: FPCR.FZ) while a thread runs the scan's combines, its previous mode restored after.
// XLA's CPU runtime (and so JAX on the CPU) runs this way too. Without it a decaying product
// that lingers in the subnormal range costs ~100 cycles an operation on Intel cores: the m = 2
// DLM filter's blocked scan at N = 102400 took 125 ms on one Xeon thread, 14 ms flushed.
const char* kFlushOn = R"(#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define JX_FTZ_ON const unsigned jx_csr = _mm_getcsr(); _mm_setcsr(jx_csr | 0x8040u);
#define JX_FTZ_OFF _mm_setcsr(jx_csr);
#elif defined(__aarch64__)
#define JX_FTZ_ON uint64_t jx_fpcr; __asm__ volatile("mrs %0, fpcr" : "=r"(jx_fpcr)); \
  __asm__ volatile("msr fpcr, %0" : : "r"(jx_fpcr | (1ull << 24)));
#define JX_FTZ_OFF __asm__ volatile("msr fpcr, %0" : : "r"(jx_fpcr));
#else
#define JX_FTZ_ON
#define JX_FTZ_OFF
#endif
)";
const char* kFlushOff = "#define JX_FTZ_ON\n#define JX_FTZ_OFF\n";

}  // namespace

std::string render_assoc_scan(const AssocProgram& ap, const std::string& name, std::int64_t chunks,
                              bool flush_subnormals, bool* unrolled) {
  const Program& b = ap.body;
  const std::size_t nc = static_cast<std::size_t>(ap.num_consts);
  const std::size_t k = (static_cast<std::size_t>(b.num_inputs) - nc) / 2;
  if (b.outputs.size() != k || ap.operands.size() != nc + k)
    throw BackendError("native: an associative scan's combine must map two elements to one");
  const AVal& lead = ap.operands[nc];
  for (std::int64_t d = 0; d < ap.axis; ++d)
    if (lead.shape[d] != 1) throw BackendError("native: the blocked associative scan needs its axis outermost");
  const std::int64_t n = lead.shape[ap.axis];
  // the combine: a scan of one step with no carries, every operand a constant (consts | a | b),
  // its ys the combined leaves; it only writes its outputs after reading all its inputs
  ScanProgram comb;
  comb.body = b;
  comb.num_consts = b.num_inputs;
  comb.length = 1;
  std::string s = render_scan(comb, name + "_comb", unrolled) + "\n";
  // static, so that the compiler may inline it into the loops below (a global function of a
  // shared object may be interposed, so it is not) and keep its operand copies in registers
  const std::string head = fmt::format("void {}_comb(", name);
  if (const auto at = s.find(head); at != std::string::npos)
    s.insert(at, "static inline __attribute__((always_inline)) ");
  std::vector<std::size_t> e;  // each leaf's element bytes
  std::size_t elem = 0;
  for (std::size_t j = 0; j < k; ++j) {
    e.push_back(b.buffers[nc + j].bytes());
    elem += e.back();
  }
  if (elem > kAssocMaxElementBytes)
    throw BackendError(fmt::format("native: an associative-scan element of {} bytes is over the blocked scan's {}",
                                   elem, kAssocMaxElementBytes));
  const std::int64_t len = (n + chunks - 1) / chunks;
  // pointer lists for one combine: `a` earlier (prefix), `b` later, `o` the result
  auto call = [&](const std::string& a, const std::string& bb, const std::string& o, const std::string& ind) {
    std::string r = ind + "{\n" + ind + "  const void* in[] = {";
    for (std::size_t i = 0; i < nc; ++i) r += fmt::format("in_[{}], ", i);
    for (std::size_t j = 0; j < k; ++j) r += fmt::format("{}, ", fmt::format(fmt::runtime(a), j));
    for (std::size_t j = 0; j < k; ++j) r += fmt::format("{}, ", fmt::format(fmt::runtime(bb), j));
    r += "0};\n" + ind + "  void* out[] = {";
    for (std::size_t j = 0; j < k; ++j) r += fmt::format("{}, ", fmt::format(fmt::runtime(o), j));
    return r + "0};\n" + ind + fmt::format("  {}_comb(in, out);\n", name) + ind + "}\n";
  };
  s += flush_subnormals ? kFlushOn : kFlushOff;
  s += fmt::format("void {}(const void* const* in_, void* const* out_) {{\n", name);
  s += fmt::format("  const int64_t n = {}, len = {};\n", n, len);
  std::string ex = "  static const int64_t e[] = {", off = "  static const int64_t off[] = {";
  std::size_t o = 0;
  for (std::size_t j = 0; j < k; ++j) {
    ex += fmt::format("{}, ", e[j]);
    off += fmt::format("{}, ", o);
    o += e[j];
  }
  s += ex + "0};\n" + off + "0};\n";
  s += "  const unsigned char* x[] = {";
  for (std::size_t j = 0; j < k; ++j) s += fmt::format("(const unsigned char*)in_[{}], ", nc + j);
  s += "0};\n  unsigned char* y[] = {";
  for (std::size_t j = 0; j < k; ++j) s += fmt::format("(unsigned char*)out_[{}], ", j);
  s += "0};\n";
  s += fmt::format("#define JX_POS(i) ({})\n", ap.reverse ? "n - 1 - (i)" : "(i)");
  // pass 1
  s += fmt::format("  #pragma omp parallel for schedule(static, 1)\n  for (int64_t c = 0; c < {}; ++c) {{\n", chunks);
  s += "    const int64_t lo = c * len, hi = lo + len < n ? lo + len : n;\n    if (lo >= hi) continue;\n";
  s += "    JX_FTZ_ON\n";
  s += fmt::format(
      "    for (int j = 0; j < {}; ++j) memcpy(y[j] + JX_POS(lo) * e[j], x[j] + JX_POS(lo) * e[j], e[j]);\n", k);
  s += "    for (int64_t i = lo + 1; i < hi; ++i)\n";
  s += call("y[{0}] + JX_POS(i - 1) * e[{0}]", "x[{0}] + JX_POS(i) * e[{0}]", "y[{0}] + JX_POS(i) * e[{0}]", "    ");
  s += "    JX_FTZ_OFF\n  }\n";
  if (chunks > 1) {
    // pass 2: p + (c - 1) * elem holds P_c for c >= 1 (P_0 is chunk 0's last result)
    s += fmt::format("  unsigned char* p = (unsigned char*)malloc({});\n  if (!p) abort();\n",
                     (chunks - 1) * static_cast<std::int64_t>(std::max<std::size_t>(elem, 1)));
    s += "#define JX_PREFIX(c, j) ((c) == 0 ? y[j] + JX_POS(len - 1) * e[j] : p + ((c) - 1) * " + std::to_string(elem) +
         " + off[j])\n";
    s += fmt::format("  {{\n  JX_FTZ_ON\n  for (int64_t c = 1; c < {}; ++c) {{\n", chunks - 1);
    s += "    const int64_t hi = (c + 1) * len < n ? (c + 1) * len : n;\n    if (c * len >= hi) break;\n";
    s += call("JX_PREFIX(c - 1, {0})", "y[{0}] + JX_POS(hi - 1) * e[{0}]", "JX_PREFIX(c, {0})", "    ");
    s += "  }\n  JX_FTZ_OFF\n  }\n";
    // pass 3: through a copy of y_i, so that no combine reads what it writes
    s += fmt::format("  #pragma omp parallel for schedule(static, 1)\n  for (int64_t c = 1; c < {}; ++c) {{\n", chunks);
    s += fmt::format("    unsigned char t[{}] __attribute__((aligned(16)));\n", std::max<std::size_t>(elem, 1));
    s += "    const int64_t lo = c * len, hi = lo + len < n ? lo + len : n;\n    JX_FTZ_ON\n";
    s += "    for (int64_t i = lo; i < hi; ++i) {\n";
    s += fmt::format("      for (int j = 0; j < {}; ++j) memcpy(t + off[j], y[j] + JX_POS(i) * e[j], e[j]);\n", k);
    s += call("JX_PREFIX(c - 1, {0})", "t + off[{0}]", "y[{0}] + JX_POS(i) * e[{0}]", "      ");
    s += "    }\n    JX_FTZ_OFF\n  }\n  free(p);\n#undef JX_PREFIX\n";
  }
  return s + "#undef JX_POS\n}\n#undef JX_FTZ_ON\n#undef JX_FTZ_OFF\n";
}

}  // namespace jx::native
