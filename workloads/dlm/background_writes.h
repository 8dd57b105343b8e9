#pragma once
// Output pieces written on a second thread while the next chunk function runs: the streamed fit
// computes on one core while the other lays out, checksums and writes what the previous call
// produced.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/jx.h"
#include "workloads/dlm/dlm_write.h"

namespace jx::dlm {

// Invariants: only the worker calls the ResultWriter between construction and finish(); Array
// handles are created and released on the calling thread only (the worker reads host memory
// through a pointer the handle keeps valid); pieces are written in the order they were put.
class BackgroundWrites {
 public:
  explicit BackgroundWrites(ResultWriter& out);
  ~BackgroundWrites();  // stops the worker; pieces not yet written are dropped
  BackgroundWrites(const BackgroundWrites&) = delete;
  BackgroundWrites& operator=(const BackgroundWrites&) = delete;

  // Steps [t0, t0 + count) of reserved array `id`, step-major in `a`. A float64 array of a host
  // backend is read in place (kept alive until written); anything else is copied out here.
  void put(int id, std::int64_t t0, std::int64_t count, const Array& a);
  // Waits until every piece is written; rethrows the first write error.
  void finish();

 private:
  struct Job {
    int id;
    std::int64_t t0, count;
    Array keep;                // released on the calling thread once written
    const double* data;        // into keep's host memory, or into copy
    std::vector<double> copy;  // values copied out (device backends, other dtypes)
    bool done = false;         // set by the worker under mu_, its last touch of the job
  };
  void loop();
  void release_done();  // calling thread: drops finished jobs (and their arrays) from the front

  ResultWriter& out_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<std::unique_ptr<Job>> jobs_;  // owned here; the worker takes Job* in order
  std::size_t next_ = 0;                   // index into jobs_ of the next job for the worker
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace jx::dlm
