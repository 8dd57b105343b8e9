#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/errors.h"

namespace jx {

enum class DType : std::uint8_t { float32, float64, int32, bool_ };

std::string_view dtype_name(DType d);          // "float32", "float64", "int32", "bool"
std::string_view dtype_short_name(DType d);    // "f32", "f64", "i32", "bool" (jaxpr printer)
DType dtype_from_name(std::string_view name);  // accepts both forms; throws ShapeError
std::size_t dtype_size(DType d);
bool is_floating(DType d);
// v is within int32's range (NaN is not): converting a double outside it to int32 is undefined
// behaviour, so every such conversion checks this first.
inline bool fits_int32(double v) { return v >= -2147483648.0 && v <= 2147483647.0; }
// Promotion lattice bool < int32 < float32 < float64 (numpy's for these four types, except
// that int32 with float32 stays float32 as in JAX).
DType promote(DType a, DType b);

// Storage type of each dtype; bool is stored as one byte holding 0 or 1.
template <DType D>
struct StorageOf;
template <>
struct StorageOf<DType::float32> {
  using type = float;
};
template <>
struct StorageOf<DType::float64> {
  using type = double;
};
template <>
struct StorageOf<DType::int32> {
  using type = std::int32_t;
};
template <>
struct StorageOf<DType::bool_> {
  using type = std::uint8_t;
};

// Calls f.template operator()<T>() with T the storage type of d.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::float32: return f.template operator()<float>();
    case DType::float64: return f.template operator()<double>();
    case DType::int32: return f.template operator()<std::int32_t>();
    case DType::bool_: return f.template operator()<std::uint8_t>();
  }
  throw Error("visit_dtype: invalid dtype");
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::float64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::bool_;
}

}  // namespace jx
