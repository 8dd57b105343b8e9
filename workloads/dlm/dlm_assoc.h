#pragma once
// The `assoc` algorithm's pieces: filter and smoother as associative scans (O(log n) depth).
#include "core/jx.h"

namespace jx::dlm::detail {

struct AssocFilter {
  Array xu, Pu;  // filtered (updated with y_t): [n,m], [n,m,m]
  Array xp, Pp;  // predicted one step ahead from each: x_{t+1|t} [n,m], P_{t+1|t} [n,m,m]
};
AssocFilter assoc_filter(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                         const Array& W, const Array& C0);
// Smoothed means [n,m] and covariances [n,m,m] from the filter's output.
std::pair<Array, Array> assoc_smoother(const AssocFilter& f, const Array& G);

}  // namespace jx::dlm::detail
