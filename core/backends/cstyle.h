#pragma once
// One renderer of the kernel IR's scalar nodes into C-family source, which each dialect
// specializes (tinygrad's CStyleLanguage): C99 for the native backend (native/c_renderer.cc),
// GLSL 4.50 for vulkan (vulkan/glsl_renderer.cc). The base spells every elementwise primitive
// once, with the shared spellings (infix arithmetic, comparisons, logical operators through
// truthy(), select, convert); a dialect overrides op() only for the primitives its language spells
// its own way (C: libm names, wrapping int32 helpers; GLSL: its transcendental helpers) and
// passes the rest to the base. The meaning of each operation is core/prim/scalar_ops.h's.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/kernel/kernel.h"

namespace jx {

// float32 sums of 3 to kShortF32Sum terms (matrix products, the factorizations' inner products)
// accumulate in float, in the interpreter's order, as JAX's float32 products do, rather than in
// double as the oracle does: a few ulps from the oracle, without an f32 -> f64 conversion per
// term (and on GPUs half-rate f64 arithmetic). Longer sums (reductions over positions) stay in
// double. Two-term sums keep the double accumulator: their double sum rounded once is the float
// sum anyway. Each compiled dialect turns it off on its own: JX_VK_F32_ACC=0, JX_NATIVE_F32_ACC=0.
inline constexpr std::int64_t kShortF32Sum = 64;
inline bool short_f32_sum(std::int64_t terms) { return terms > 2 && terms <= kShortF32Sum; }

class CStyleLanguage {
 public:
  virtual ~CStyleLanguage() = default;

  // ---- what every dialect spells its own way ----
  virtual std::string type(DType d) const = 0;               // the scalar type of a dtype
  virtual std::string literal(DType d, double v) const = 0;  // exact
  // e converted to d; `atom`: e needs no parentheses (a name, an element access)
  virtual std::string cast(DType d, const std::string& e, bool atom) const = 0;
  // load l of node n at element offset `off` (an index expression), as n's dtype
  virtual std::string load(const Kernel& k, const KLoad& l, const KNode& n, const std::string& off) const = 0;
  virtual std::string clamp(const std::string& off, std::int64_t hi) const = 0;  // into [0, hi]
  virtual std::string index_value(int node) const = 0;                           // node's value as an element offset
  // a value of dtype d as a condition
  virtual std::string truthy(DType d, const std::string& v) const = 0;

  // ---- written once ----
  // The expression of elementwise node n (operands v<a>, v<b>, v<c>); dialects override it for
  // their own spellings and call CStyleLanguage::op for the rest. Throws Error for a primitive
  // that is not elementwise.
  virtual std::string op(const Kernel& k, const KNode& n) const;
  // `const T v<i> = ...;` for each node of `order` (topological, the values of its nodes without
  // users in it the results); idx[d] is the expression of space dim d's index. A select whose
  // branches read memory the other does not, and that the dialect evaluates lazily (lazy_select),
  // becomes an if / else, each branch computing the nodes only it uses.
  std::string nodes(const Kernel& k, const std::vector<int>& order, const std::vector<std::string>& idx,
                    const std::string& ind) const;
  // Whether nodes() computes only the taken branch of select node `select` of k, whose branches
  // read then_loads and else_loads values (a GPU, where warps agree on the condition and the
  // untaken branch's loads are worth a jump: a window of concatenate or pad that the select
  // discards). Default: both branches (compilers that vectorize loops over outputs want
  // straight-line code).
  virtual bool lazy_select(const Kernel& /*k*/, int /*select*/, int /*then_loads*/, int /*else_loads*/) const {
    return false;
  }
  // Names for a node evaluated more than once in one scope (a tile of outputs per invocation):
  // node i's value is v<i><suffix(i)>, a reduce_result reads `acc`. Default: v<i> and "acc".
  void rename(std::function<std::string(int)> suffix, std::string acc) {
    suffix_ = std::move(suffix);
    acc_ = std::move(acc);
  }

 protected:
  // the operands' dtype of node n (select: its branches'), and their names
  static DType operand_dtype(const Kernel& k, const KNode& n);
  std::string var(int i) const { return i >= 0 ? "v" + std::to_string(i) + (suffix_ ? suffix_(i) : "") : ""; }
  std::string node(const Kernel& k, int i, const std::vector<std::string>& idx) const;  // node i's expression

 private:
  std::function<std::string(int)> suffix_;
  std::string acc_ = "acc";
};

}  // namespace jx
