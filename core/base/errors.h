#pragma once
#include <stdexcept>
#include <string>

namespace jx {

// Every error the runtime throws derives from jx::Error; none aborts the process.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Shape, dtype, axis and index problems, e.g. "add: cannot broadcast float32[3,2] with float32[4]".
struct ShapeError : Error {
  using Error::Error;
};
// Any use of a handle after dispose(): "Referenced tracer Array:float32[2,2] has been disposed".
struct UseAfterDispose : Error {
  using Error::Error;
};
// Unknown or unusable backend, arrays of different backends mixed in one op.
struct BackendError : Error {
  using Error::Error;
};
// Data-dependent linear algebra failures detected at run time (singular triangular factor).
struct LinAlgError : Error {
  using Error::Error;
};
// Reading a traced value, or using a tracer after its transformation ended.
struct TracerError : Error {
  using Error::Error;
};
// A primitive that is not linear met while transposing (vjp/grad): its transpose rule is missing.
struct NonlinearError : Error {
  using Error::Error;
};
// A scan took a path its caller's require_path did not allow.
struct ScanPathError : Error {
  using Error::Error;
};
// Slots alive at the end of a leak-checked scope that were not alive at its start.
struct LeakError : Error {
  using Error::Error;
};

}  // namespace jx
