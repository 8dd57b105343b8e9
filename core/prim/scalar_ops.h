#pragma once
// The meaning of every elementwise primitive on one element, written once. The cpu oracle
// evaluates it, eagerly (cpu_eval.cc) and in its kernel interpreter (cpu_kernel.cc); the compiled
// backends spell the same operations in C and GLSL (core/backends/cstyle.h, checked against the
// oracle case by case by tests/prim_cases.h). T is the operands' type (float, double, int32_t, or
// uint8_t for bool; select: its branches' type, its condition given as 0/1):
//   neg, abs          IEEE on floats (so -0.0 and |-0.0| = +0.0); two's complement on int32
//   add, sub, mul     wrap around on int32
//   max, min          propagate NaN (either operand)
//   sign              NaN for NaN, else -1, 0 or 1
//   convert           float -> int32 saturates and maps NaN to 0; to bool: x != 0
// abstract_eval admits the transcendental ones, div, pow, isnan and isfinite on floats only, the
// logical ones on bool only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <fmt/format.h>
#include <type_traits>

#include "core/base/errors.h"
#include "core/prim/prim.h"

namespace jx::scalar {

template <class T>
inline constexpr bool is_float = std::is_floating_point_v<T>;

template <class T>
bool is_nan(T v) {
  if constexpr (is_float<T>)
    return std::isnan(v);
  else
    return false;
}

// a op b on int32 wraps (computed on uint32), elsewhere T's own arithmetic
template <Prim P, class T>
T arith(T a, T b) {
  if constexpr (std::is_same_v<T, std::int32_t>) {
    const auto ua = static_cast<std::uint32_t>(a), ub = static_cast<std::uint32_t>(b);
    return static_cast<T>(P == Prim::add ? ua + ub : P == Prim::sub ? ua - ub : ua * ub);
  } else {
    return static_cast<T>(P == Prim::add ? a + b : P == Prim::sub ? a - b : a * b);
  }
}

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, std::uint8_t>)
    return v != From(0) ? 1 : 0;
  else if constexpr (is_float<To>)
    return static_cast<To>(v);
  else if constexpr (is_float<From>) {  // float -> int32: saturate, NaN -> 0
    if (std::isnan(v)) return 0;
    if (v >= From(2147483647.0)) return std::numeric_limits<To>::max();
    if (v <= From(-2147483648.0)) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else
    return static_cast<To>(v);
}

// Elementwise primitive P (not convert) on one element. The result: a T for the arithmetic ones,
// a bool for isnan, isfinite, the comparisons and the logical ones (bool operands) — returned as a
// double, which holds either exactly.
template <Prim P, class T>
double apply(T a, T b = T(0), T c = T(0)) {
  if constexpr (P == Prim::neg) {
    if constexpr (is_float<T>)
      return -a;
    else
      return arith<Prim::sub>(T(0), a);
  } else if constexpr (P == Prim::abs) {
    if constexpr (is_float<T>)
      return std::abs(a);
    else
      return a < T(0) ? arith<Prim::sub>(T(0), a) : a;
  } else if constexpr (P == Prim::sign) {
    return is_nan(a) ? static_cast<double>(a) : a > T(0) ? 1.0 : a < T(0) ? -1.0 : 0.0;
  } else if constexpr (P == Prim::exp) {
    return static_cast<T>(std::exp(a));
  } else if constexpr (P == Prim::log) {
    return static_cast<T>(std::log(a));
  } else if constexpr (P == Prim::log1p) {
    return static_cast<T>(std::log1p(a));
  } else if constexpr (P == Prim::sqrt) {
    return static_cast<T>(std::sqrt(a));
  } else if constexpr (P == Prim::sin) {
    return static_cast<T>(std::sin(a));
  } else if constexpr (P == Prim::cos) {
    return static_cast<T>(std::cos(a));
  } else if constexpr (P == Prim::tanh) {
    return static_cast<T>(std::tanh(a));
  } else if constexpr (P == Prim::logical_not) {
    return a == T(0);
  } else if constexpr (P == Prim::isnan) {
    return is_nan(a);
  } else if constexpr (P == Prim::isfinite) {
    if constexpr (is_float<T>)
      return std::isfinite(a);
    else
      return true;
  } else if constexpr (P == Prim::stop_gradient) {
    return a;
  } else if constexpr (P == Prim::add || P == Prim::sub || P == Prim::mul) {
    return arith<P>(a, b);
  } else if constexpr (P == Prim::div) {
    return static_cast<T>(a / b);
  } else if constexpr (P == Prim::pow) {
    return static_cast<T>(std::pow(a, b));
  } else if constexpr (P == Prim::max) {
    return is_nan(a) ? a : is_nan(b) ? b : std::max(a, b);
  } else if constexpr (P == Prim::min) {
    return is_nan(a) ? a : is_nan(b) ? b : std::min(a, b);
  } else if constexpr (P == Prim::lt) {
    return a < b;
  } else if constexpr (P == Prim::le) {
    return a <= b;
  } else if constexpr (P == Prim::gt) {
    return a > b;
  } else if constexpr (P == Prim::ge) {
    return a >= b;
  } else if constexpr (P == Prim::eq) {
    return a == b;
  } else if constexpr (P == Prim::ne) {
    return a != b;
  } else if constexpr (P == Prim::logical_and) {
    return a != T(0) && b != T(0);
  } else if constexpr (P == Prim::logical_or) {
    return a != T(0) || b != T(0);
  } else if constexpr (P == Prim::select) {
    return a != T(0) ? b : c;
  } else {
    static_assert(prim_kind(P) != PrimKind::elementwise || P == Prim::convert,
                  "an elementwise primitive without a meaning");
    return 0.0;  // not elementwise: never called (with_elementwise refuses it)
  }
}

// f.template operator()<P>() with P the elementwise primitive p as a constant (one instantiation
// per primitive, so a loop over elements inside f has no switch); throws Error for other primitives.
template <class F>
decltype(auto) with_elementwise(Prim p, F&& f) {
  switch (p) {
#define JX_PRIM(name, arity, kind)                           \
  case Prim::name:                                           \
    if constexpr (PrimKind::kind == PrimKind::elementwise) { \
      return f.template operator()<Prim::name>();            \
    } else {                                                 \
      break;                                                 \
    }
#include "core/prim/prims.def"
#undef JX_PRIM
  }
  throw Error(fmt::format("{} is not an elementwise primitive", prim_name(p)));
}

// A value carried as a double, held in dtype d as the kernel interpreter holds every node's value:
// float32 rounded, int32 wrapped (through int64), bool 0 or 1.
inline double round_to(DType d, double v) {
  switch (d) {
    case DType::float32: return static_cast<float>(v);
    case DType::int32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v))));
    case DType::bool_: return v != 0.0 ? 1.0 : 0.0;
    case DType::float64: break;
  }
  return v;
}

// Elementwise primitive p (convert included) on one element: operands a, b, c carried as doubles
// of dtype `in` (select: its branches'; its condition 0 or 1), the result of dtype `out`. One
// dispatch per element: for the few values a renderer evaluates (core/kernel/index_eval.h); the
// interpreter's loops dispatch once per chunk.
inline double apply_one(Prim p, DType in, DType out, double a, double b = 0.0, double c = 0.0) {
  if (p == Prim::convert)
    return visit_dtype(in, [&]<class S>() {
      return visit_dtype(out, [&]<class T>() { return static_cast<double>(convert<T>(static_cast<S>(a))); });
    });
  return visit_dtype(in, [&]<class T>() {
    return with_elementwise(p, [&]<Prim P>() -> double {
      if constexpr (P == Prim::convert)
        return 0.0;  // handled above
      else
        return apply<P, T>(T(a), T(b), T(c));
    });
  });
}

}  // namespace jx::scalar
