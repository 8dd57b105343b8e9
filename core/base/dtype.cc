#include "core/base/dtype.h"

namespace jx {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::bool_: return "bool";
  }
  return "invalid";
}

std::string_view dtype_short_name(DType d) {
  switch (d) {
    case DType::float32: return "f32";
    case DType::float64: return "f64";
    case DType::int32: return "i32";
    case DType::bool_: return "bool";
  }
  return "invalid";
}

DType dtype_from_name(std::string_view n) {
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::bool_})
    if (n == dtype_name(d) || n == dtype_short_name(d)) return d;
  throw ShapeError("unknown dtype '" + std::string(n) + "' (expected float32, float64, int32 or bool)");
}

std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::bool_: return 1;
  }
  return 0;
}

bool is_floating(DType d) { return d == DType::float32 || d == DType::float64; }

static int rank(DType d) {
  switch (d) {
    case DType::bool_: return 0;
    case DType::int32: return 1;
    case DType::float32: return 2;
    case DType::float64: return 3;
  }
  return 0;
}

DType promote(DType a, DType b) { return rank(a) >= rank(b) ? a : b; }

}  // namespace jx
