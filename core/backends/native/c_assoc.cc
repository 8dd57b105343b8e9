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

// What the three passes need: the combine's arity, the positions, the chunk length, each leaf's
// element bytes and offset within one packed element (elem bytes in all).
struct AssocLayout {
  std::size_t nc = 0, k = 0;
  std::int64_t n = 0, chunks = 0, len = 0;
  std::vector<std::size_t> e, off;
  std::size_t elem = 0;
  std::string name;
};

AssocLayout plan_assoc(const AssocProgram& ap, const std::string& name, std::int64_t chunks) {
  const Program& b = ap.body;
  AssocLayout L;
  L.name = name;
  L.nc = static_cast<std::size_t>(ap.num_consts);
  L.k = (static_cast<std::size_t>(b.num_inputs) - L.nc) / 2;
  if (b.outputs.size() != L.k || ap.operands.size() != L.nc + L.k)
    throw BackendError("native: an associative scan's combine must map two elements to one");
  const AVal& lead = ap.operands[L.nc];
  for (std::int64_t d = 0; d < ap.axis; ++d)
    if (lead.shape[d] != 1) throw BackendError("native: the blocked associative scan needs its axis outermost");
  L.n = lead.shape[ap.axis];
  L.chunks = chunks;
  L.len = (L.n + chunks - 1) / chunks;
  for (std::size_t j = 0; j < L.k; ++j) {
    L.off.push_back(L.elem);
    L.e.push_back(b.buffers[L.nc + j].bytes());
    L.elem += L.e.back();
  }
  if (L.elem > kAssocMaxElementBytes)
    throw BackendError(fmt::format("native: an associative-scan element of {} bytes is over the blocked scan's {}",
                                   L.elem, kAssocMaxElementBytes));
  return L;
}

// One combine o := a ∘ b; a, b and o are formats of the leaf index j giving byte pointers.
std::string call(const AssocLayout& L, const std::string& a, const std::string& b, const std::string& o,
                 const std::string& ind) {
  auto each = [&](const std::string& f) {
    std::string r;
    for (std::size_t j = 0; j < L.k; ++j) r += fmt::format(fmt::runtime(f), j) + ", ";
    return r;
  };
  std::string r = ind + "{\n" + ind + "  const void* in[] = {";
  for (std::size_t i = 0; i < L.nc; ++i) r += fmt::format("in_[{}], ", i);
  r += each(a) + each(b) + "0};\n" + ind + "  void* out[] = {" + each(o) + "0};\n";
  return r + ind + fmt::format("  {}_comb(in, out);\n", L.name) + ind + "}\n";
}

// The function's head: element sizes and offsets, the leaves' pointers, position order.
std::string head(const AssocLayout& L, bool reverse) {
  std::string ex = "  static const int64_t e[] = {", off = "  static const int64_t off[] = {";
  std::string x = "  const unsigned char* x[] = {", y = "  unsigned char* y[] = {";
  for (std::size_t j = 0; j < L.k; ++j) {
    ex += fmt::format("{}, ", L.e[j]);
    off += fmt::format("{}, ", L.off[j]);
    x += fmt::format("(const unsigned char*)in_[{}], ", L.nc + j);
    y += fmt::format("(unsigned char*)out_[{}], ", j);
  }
  std::string s = fmt::format("void {}(const void* const* in_, void* const* out_) {{\n", L.name);
  s += fmt::format("  const int64_t n = {}, len = {};\n", L.n, L.len);
  s += ex + "0};\n" + off + "0};\n" + x + "0};\n" + y + "0};\n";
  return s + fmt::format("#define JX_POS(i) ({})\n", reverse ? "n - 1 - (i)" : "(i)");
}

// Pass 1: each chunk folds its own positions on a thread.
std::string fold_chunks(const AssocLayout& L) {
  std::string s =
      fmt::format("  #pragma omp parallel for schedule(static, 1)\n  for (int64_t c = 0; c < {}; ++c) {{\n", L.chunks);
  s += "    const int64_t lo = c * len, hi = lo + len < n ? lo + len : n;\n    if (lo >= hi) continue;\n";
  s += "    JX_FTZ_ON\n";
  s += fmt::format(
      "    for (int j = 0; j < {}; ++j) memcpy(y[j] + JX_POS(lo) * e[j], x[j] + JX_POS(lo) * e[j], e[j]);\n", L.k);
  s += "    for (int64_t i = lo + 1; i < hi; ++i)\n";
  s += call(L, "y[{0}] + JX_POS(i - 1) * e[{0}]", "x[{0}] + JX_POS(i) * e[{0}]", "y[{0}] + JX_POS(i) * e[{0}]", "    ");
  return s + "    JX_FTZ_OFF\n  }\n";
}

// Pass 2: the chunks' prefixes in order, p + (c - 1)·elem holding P_c for c ≥ 1 (P_0 is chunk
// 0's last result). Pass 3: every later chunk's positions combined with the prefix before it on
// the threads, each through a copy of y_i, so that no combine reads what it writes.
std::string apply_prefixes(const AssocLayout& L) {
  std::string s = fmt::format("  unsigned char* p = (unsigned char*)malloc({});\n  if (!p) abort();\n",
                              (L.chunks - 1) * static_cast<std::int64_t>(std::max<std::size_t>(L.elem, 1)));
  s += fmt::format("#define JX_PREFIX(c, j) ((c) == 0 ? y[j] + JX_POS(len - 1) * e[j] : p + ((c) - 1) * {} + off[j])\n",
                   L.elem);
  s += fmt::format("  {{\n  JX_FTZ_ON\n  for (int64_t c = 1; c < {}; ++c) {{\n", L.chunks - 1);
  s += "    const int64_t hi = (c + 1) * len < n ? (c + 1) * len : n;\n    if (c * len >= hi) break;\n";
  s += call(L, "JX_PREFIX(c - 1, {0})", "y[{0}] + JX_POS(hi - 1) * e[{0}]", "JX_PREFIX(c, {0})", "    ");
  s += "  }\n  JX_FTZ_OFF\n  }\n";
  s += fmt::format("  #pragma omp parallel for schedule(static, 1)\n  for (int64_t c = 1; c < {}; ++c) {{\n", L.chunks);
  s += fmt::format("    unsigned char t[{}] __attribute__((aligned(16)));\n", std::max<std::size_t>(L.elem, 1));
  s += "    const int64_t lo = c * len, hi = lo + len < n ? lo + len : n;\n    JX_FTZ_ON\n";
  s += "    for (int64_t i = lo; i < hi; ++i) {\n";
  s += fmt::format("      for (int j = 0; j < {}; ++j) memcpy(t + off[j], y[j] + JX_POS(i) * e[j], e[j]);\n", L.k);
  s += call(L, "JX_PREFIX(c - 1, {0})", "t + off[{0}]", "y[{0}] + JX_POS(i) * e[{0}]", "      ");
  return s + "    }\n    JX_FTZ_OFF\n  }\n  free(p);\n#undef JX_PREFIX\n";
}

}  // namespace

std::string render_assoc_scan(const AssocProgram& ap, const std::string& name, std::int64_t chunks,
                              bool flush_subnormals, bool* unrolled) {
  const AssocLayout L = plan_assoc(ap, name, chunks);
  // the combine: a scan of one step with no carries, every operand a constant (consts | a | b),
  // its ys the combined leaves; it only writes its outputs after reading all its inputs
  ScanProgram comb;
  comb.body = ap.body;
  comb.num_consts = ap.body.num_inputs;
  comb.length = 1;
  std::string s = render_scan(comb, name + "_comb", unrolled) + "\n";
  // static, so that the compiler may inline it into the loops below (a global function of a
  // shared object may be interposed, so it is not) and keep its operand copies in registers
  if (const auto at = s.find(fmt::format("void {}_comb(", name)); at != std::string::npos)
    s.insert(at, "static inline __attribute__((always_inline)) ");
  s += flush_subnormals ? kFlushOn : kFlushOff;
  s += head(L, ap.reverse) + fold_chunks(L);
  if (chunks > 1) s += apply_prefixes(L);
  return s + "#undef JX_POS\n}\n#undef JX_FTZ_ON\n#undef JX_FTZ_OFF\n";
}

}  // namespace jx::native
