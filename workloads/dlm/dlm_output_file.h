#pragma once
// Internal to workloads/dlm's writers (dlm_write.cc, dlm_npz.cc): the output file, written in
// order with its position known, and a field's values read in blocks.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "workloads/dlm/dlm_write.h"

namespace jx::dlm::detail {

inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// A buffered file with the position known (npz patches CRCs into headers already written).
class OutputFile {
 public:
  // Writes from byte `start` on (npz: after the entries written in place), truncating unless
  // start > 0.
  explicit OutputFile(const std::string& path, std::int64_t start = 0)
      : path_(path), f_(std::fopen(path.c_str(), start > 0 ? "r+b" : "wb")), pos_(start) {
    if (!f_)
      throw Error(
          fmt::format("{}: cannot write the output file (opening {} failed: {})", path, path, std::strerror(errno)));
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    if (start > 0 && std::fseek(f_, start, SEEK_SET) != 0) fail("seek");
  }
  ~OutputFile() {
    if (f_) std::fclose(f_);
  }
  void put(const char* p, std::size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail("write");
    pos_ += static_cast<std::int64_t>(n);
  }
  void put(const std::string& s) { put(s.data(), s.size()); }
  void patch(std::int64_t at, const void* p, std::size_t n) {
    if (std::fflush(f_) != 0 || std::fseek(f_, at, SEEK_SET) != 0 || std::fwrite(p, 1, n, f_) != n ||
        std::fseek(f_, 0, SEEK_END) != 0)
      fail("write");
  }
  void close() {
    const int r = std::fclose(f_);
    f_ = nullptr;
    if (r != 0) fail("write");
  }
  std::int64_t pos() const { return pos_; }

 private:
  [[noreturn]] void fail(const char* what) {
    throw Error(fmt::format("{}: {} failed: {}", path_, what, std::strerror(errno)));
  }
  std::string path_;
  std::FILE* f_;
  std::int64_t pos_;
};

// Values of a field in blocks of kBlock, in row-major order.
constexpr std::int64_t kBlock = 1 << 16;
template <class Fn>
void each_block(const Field& f, Fn&& fn) {
  std::vector<double> buf(static_cast<std::size_t>(std::min(kBlock, std::max<std::int64_t>(numel(f.shape), 1))));
  const std::int64_t n = numel(f.shape);
  for (std::int64_t first = 0; first < n; first += kBlock) {
    const std::int64_t c = std::min(kBlock, n - first);
    f.read(first, c, buf.data());
    fn(buf.data(), c);
  }
}

}  // namespace jx::dlm::detail
