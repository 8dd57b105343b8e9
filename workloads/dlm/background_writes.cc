#include "workloads/dlm/background_writes.h"

#include "core/backends/backend.h"

namespace jx::dlm {

namespace {
// Pieces waiting at most: beyond it put() waits (memory stays bounded by a few chunks' outputs).
constexpr std::size_t kMaxPending = 32;
}  // namespace

BackgroundWrites::BackgroundWrites(ResultWriter& out) : out_(out), worker_([this] { loop(); }) {}

BackgroundWrites::~BackgroundWrites() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void BackgroundWrites::put(int id, std::int64_t t0, std::int64_t count, const Array& a) {
  auto job = std::make_unique<Job>(Job{id, t0, count, {}, nullptr, {}, false});
  const std::byte* host = a.dtype() == DType::float64 ? a.backend().host_data(a.slot()) : nullptr;
  if (host) {
    job->keep = a;
    job->data = reinterpret_cast<const double*>(host);
  } else {
    job->copy = a.to_vector<double>();
    job->data = job->copy.data();
  }
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return jobs_.size() - next_ < kMaxPending || error_; });
  jobs_.push_back(std::move(job));
  lock.unlock();
  wake_.notify_one();
  release_done();
}

void BackgroundWrites::release_done() {
  std::vector<std::unique_ptr<Job>> finished;  // destroyed after the lock is released
  {
    std::lock_guard lock(mu_);
    while (!jobs_.empty() && jobs_.front()->done) {
      finished.push_back(std::move(jobs_.front()));
      jobs_.pop_front();
      --next_;
    }
  }
}

void BackgroundWrites::finish() {
  {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return next_ == jobs_.size(); });
  }
  release_done();
  std::lock_guard lock(mu_);
  if (error_) std::rethrow_exception(error_);
}

void BackgroundWrites::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || next_ < jobs_.size(); });
    if (stop_) return;
    Job* job = jobs_[next_].get();
    const bool skip = error_ != nullptr;  // after a failure the rest is dropped
    lock.unlock();
    std::exception_ptr failure;
    if (!skip) {
      try {
        out_.write_steps(job->id, job->t0, job->count, job->data);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    lock.lock();
    if (failure && !error_) error_ = failure;
    job->done = true;
    ++next_;
    done_.notify_all();
  }
}

}  // namespace jx::dlm
