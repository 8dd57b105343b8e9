#pragma once
// dlmfit with the scan algorithm, streamed: the series runs in chunks of kStreamChunk steps and
// each chunk's outputs go to a ResultWriter on a second thread, so memory beyond the inputs is
// O(chunk) plus at most 64 MB, whatever n is, and chunk buffers are reused (fresh pages cost
// more than the scans). Two passes, as dlmfit: the first only needs the smoothed first state
// (one forward sweep: the filter carrying the first step's fixed-point smoother, stopped once
// no later step can change it); the second computes every
// output inside its scans. Forward, each chunk's filter starts from the carry (x, C) its
// predecessor left; that carry is kept (a checkpoint per chunk), and the chunk's per-step
// results too while all kept ones fit in kStreamKeptBytes. Backward, chunks run last to first: the chunk's
// filter results, kept or run again from its checkpoint, then the r/N smoother from the carry
// (r, N) of the chunk after it. The last chunk is padded with missing steps (one shape: each chunk function is
// traced and compiled once; padding at the end changes nothing before it). Every step is the
// step the whole-series scan runs, so the per-step outputs are dlm::fit's bit for bit; the
// summary's sums add in chunk order (within ~1e-14 of fit's).
#include <optional>

#include "workloads/dlm/dlm.h"
#include "workloads/dlm/dlm_write.h"

namespace jx::dlm {

constexpr std::int64_t kStreamChunk = std::int64_t{1} << 14;
// The bytes of per-step forward results a sweep keeps for its backward half (the rest run again).
constexpr std::int64_t kStreamKeptBytes = std::int64_t{64} << 20;

struct StreamedFit {
  std::vector<Field> fields;  // fields(Fit)'s order; the arrays are regions of the writer
  double lik = 0, s2 = 0;
  int nobs = 0;
  std::int64_t first_pass_steps = 0;  // the steps the first pass ran (it stops where P is zero)
};
// dlm::fit(y, s, w, o, X) with o.algorithm scan, written through `out` (commit(fields) next).
StreamedFit fit_streamed(const Array& y, const Array& s, const std::vector<double>& w, const Options& o,
                         const std::optional<Array>& X, ResultWriter& out, std::int64_t chunk = kStreamChunk,
                         std::int64_t kept_bytes = kStreamKeptBytes);

}  // namespace jx::dlm
