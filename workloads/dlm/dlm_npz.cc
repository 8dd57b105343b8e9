#include "workloads/dlm/dlm_npz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <libdeflate.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace jx::dlm {

using detail::each_block;
using detail::numel;

namespace {

void le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The .npy header: magic, version 1.0, a Python dict literal padded so the payload starts at a
// multiple of 64 bytes. fortran: the payload is column-major (the first index varies fastest).
std::string npy_header(const std::string& descr, const Shape& shape, bool fortran = false) {
  std::string sh = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    sh += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  sh += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + std::string(fortran ? "True" : "False") +
                     ", 'shape': " + sh + ", }";
  std::size_t total = 10 + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  le(h, dict.size(), 2);
  return h + dict;
}

constexpr std::uint64_t kZipLimit = 0xffffffffu;

// The fields a local header and its central-directory record share, in order: version needed,
// flags, method (stored), time and date, crc, both sizes, name length, extra length.
constexpr std::int64_t kCrcInCommon = 10;  // byte offset of the crc in them
void common_fields(std::string& s, const ZipEntry& e) {
  le(s, 20, 2);
  le(s, 0, 2);
  le(s, 0, 2);
  le(s, 0, 4);
  le(s, e.crc, 4);
  le(s, e.size, 4);
  le(s, e.size, 4);
  le(s, e.name.size(), 2);
  le(s, 0, 2);
}

class NpzOut {
 public:
  explicit NpzOut(detail::OutputFile& out) : out_(out) {}
  // One .npy entry: header, then the payload from `payload(sink)`; size known in advance.
  template <class Payload>
  void entry(const std::string& name, const std::string& header, std::uint64_t payload_bytes, Payload&& payload) {
    ZipEntry e{name + ".npy", 0, header.size() + payload_bytes, static_cast<std::uint64_t>(out_.pos())};
    if (e.offset + e.size + 1024 > kZipLimit)
      throw Error(fmt::format(
          "npz output: entry {} would end past 4 GiB, beyond the zip format this writer supports; write --format json",
          e.name));
    std::string lh;
    le(lh, 0x04034b50, 4);
    const std::int64_t crc_at = out_.pos() + static_cast<std::int64_t>(lh.size()) + kCrcInCommon;
    common_fields(lh, e);  // crc 0, patched below
    out_.put(lh + e.name);
    uLong crc = crc32(0L, Z_NULL, 0);
    auto sink = [&](const void* p, std::size_t n) {
      crc = crc32(crc, static_cast<const Bytef*>(p), static_cast<uInt>(n));
      out_.put(static_cast<const char*>(p), n);
    };
    sink(header.data(), header.size());
    payload(sink);
    e.crc = static_cast<std::uint32_t>(crc);
    std::string c;
    le(c, e.crc, 4);
    out_.patch(crc_at, c.data(), 4);
    entries_.push_back(e);
  }
  // An entry already in the file (written in place); listed in the central directory here.
  void adopt(const ZipEntry& e) { entries_.push_back(e); }
  void finish() {
    const std::uint64_t cd_at = static_cast<std::uint64_t>(out_.pos());
    std::string cd;
    for (const ZipEntry& e : entries_) {
      le(cd, 0x02014b50, 4);
      le(cd, 20, 2);  // version made by
      common_fields(cd, e);
      le(cd, 0, 2);  // comment length
      le(cd, 0, 2);
      le(cd, 0, 2);
      le(cd, 0, 4);
      le(cd, e.offset, 4);
      cd += e.name;
    }
    std::string end;
    le(end, 0x06054b50, 4);
    le(end, 0, 4);
    le(end, entries_.size(), 2);
    le(end, entries_.size(), 2);
    le(end, cd.size(), 4);
    le(end, cd_at, 4);
    le(end, 0, 2);
    out_.put(cd + end);
  }

 private:
  detail::OutputFile& out_;
  std::vector<ZipEntry> entries_;
};

}  // namespace

// Not O_TRUNC: the writer has just created the file empty, and truncating a file on ext4 marks
// it for writeback at close (auto_da_alloc: 2-9 ms of the CLI's 18.8 MB fit here); a file that
// is not empty is truncated.
NpzRegions::NpzRegions(const std::string& path, const std::string& shown)
    : shown_(shown), fd_(::open(path.c_str(), O_RDWR)) {
  struct stat st {};
  if (fd_ >= 0 && (::fstat(fd_, &st) != 0 || (st.st_size > 0 && ::ftruncate(fd_, 0) != 0))) {
    const int e = errno;
    ::close(fd_);
    errno = e;
    fd_ = -1;
  }
  if (fd_ < 0) throw Error(fmt::format("{}: cannot write the output file: {}", shown_, std::strerror(errno)));
}

void NpzRegions::allocate() {
  if (end_ > 0) (void)::fallocate(fd_, 0, 0, static_cast<off_t>(end_));
}

void NpzRegions::add(const StepArray& a, std::int64_t steps) {
  Region r;
  Shape shape = a.inner;
  if (a.steps_last)
    shape.push_back(steps);
  else
    shape.insert(shape.begin(), steps);
  const std::string header = npy_header("<f8", shape, a.steps_last);
  r.per_step = numel(a.inner);
  r.steps = steps;
  r.entry = {a.name + ".npy", 0, header.size() + static_cast<std::uint64_t>(r.per_step * steps) * 8, end_};
  if (r.entry.offset + r.entry.size + 1024 > kZipLimit)
    throw Error(
        fmt::format("{}: npz output: entry {} would end past 4 GiB, beyond the zip format this writer supports; "
                    "write --format json",
                    shown_, r.entry.name));
  std::string lh;
  le(lh, 0x04034b50, 4);
  r.crc_at = static_cast<std::int64_t>(end_ + lh.size()) + kCrcInCommon;
  common_fields(lh, r.entry);  // crc 0 until commit
  lh += r.entry.name;
  r.header_crc = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size())));
  put(lh + header, static_cast<std::int64_t>(end_));
  r.data_at = static_cast<std::int64_t>(end_ + lh.size() + header.size());
  // column-major position of each row-major inner index (reversed axes)
  const std::size_t rank = a.inner.size();
  for (std::int64_t e = 0; e < r.per_step; ++e) {
    std::int64_t rest = e, f = 0, stride = 1;
    std::vector<std::int64_t> idx(rank);
    for (std::size_t d = rank; d-- > 0;) idx[d] = rest % a.inner[d], rest /= a.inner[d];
    for (std::size_t d = 0; d < rank; ++d) f += idx[d] * stride, stride *= a.inner[d];
    r.column_major.push_back(f);
  }
  r.permute = a.steps_last && rank > 1;
  end_ = static_cast<std::uint64_t>(r.data_at) + static_cast<std::uint64_t>(r.per_step * steps) * 8;
  regions_.push_back(std::move(r));
}

void NpzRegions::write(std::size_t id, std::int64_t t0, std::int64_t count, const double* v) {
  Region& r = regions_.at(id);
  const std::int64_t n = count * r.per_step;
  if (r.permute) {
    scratch_.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < count; ++k)
      for (std::int64_t e = 0; e < r.per_step; ++e)
        scratch_[static_cast<std::size_t>(k * r.per_step + r.column_major[e])] = v[k * r.per_step + e];
    v = scratch_.data();
  }
  const std::size_t bytes = static_cast<std::size_t>(n) * 8;
  put(std::string_view(reinterpret_cast<const char*>(v), bytes), r.data_at + t0 * r.per_step * 8);
  r.pieces.push_back({t0, count, static_cast<std::uint32_t>(libdeflate_crc32(0, v, bytes))});
}

ZipEntry NpzRegions::finish(std::size_t id) {
  Region& r = regions_.at(id);
  std::sort(r.pieces.begin(), r.pieces.end(), [](const Piece& a, const Piece& b) { return a.t0 < b.t0; });
  uLong crc = r.header_crc;
  std::int64_t next = 0;
  for (const Piece& p : r.pieces) {
    if (p.t0 != next) break;
    crc = crc32_combine(crc, p.crc, static_cast<z_off_t>(p.count * r.per_step * 8));
    next += p.count;
  }
  if (next != r.steps)
    throw Error(fmt::format("{}: npz output: {} has steps {}.. unwritten (pieces overlap or are missing)", shown_,
                            r.entry.name, next));
  r.entry.crc = static_cast<std::uint32_t>(crc);
  std::string c;
  le(c, r.entry.crc, 4);
  put(c, r.crc_at);
  return r.entry;
}

void NpzRegions::put(std::string_view b, std::int64_t at) {
  while (!b.empty()) {
    const ssize_t w = ::pwrite(fd_, b.data(), b.size(), at);
    if (w <= 0) throw Error(fmt::format("{}: write failed: {}", shown_, w < 0 ? std::strerror(errno) : "no progress"));
    b.remove_prefix(static_cast<std::size_t>(w));
    at += w;
  }
}

NpzRegions::~NpzRegions() { ::close(fd_); }

namespace {

void npz_scalar(NpzOut& z, const std::string& name, const nlohmann::json& v) {
  if (v.is_boolean()) {
    const char b = v.get<bool>() ? 1 : 0;
    z.entry(name, npy_header("|b1", {}), 1, [&](auto&& sink) { sink(&b, 1); });
  } else if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    z.entry(name, npy_header("<i8", {}), 8, [&](auto&& sink) { sink(&i, 8); });
  } else if (v.is_number()) {
    const double d = v.get<double>();
    z.entry(name, npy_header("<f8", {}), 8, [&](auto&& sink) { sink(&d, 8); });
  } else if (v.is_null()) {
    const double d = NAN;
    z.entry(name, npy_header("<f8", {}), 8, [&](auto&& sink) { sink(&d, 8); });
  } else if (v.is_string()) {
    // numpy's unicode scalars are UTF-32; the texts written here are ASCII
    const std::string s = v.get<std::string>();
    std::vector<std::uint32_t> u(s.begin(), s.end());
    const std::size_t len = std::max<std::size_t>(u.size(), 1);
    u.resize(len, 0);
    z.entry(name, npy_header("<U" + std::to_string(len), {}), len * 4, [&](auto&& sink) { sink(u.data(), len * 4); });
  } else if (v.is_array() &&
             std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number() || e.is_null(); })) {
    std::vector<double> d;
    for (const auto& e : v) d.push_back(e.is_null() ? NAN : e.get<double>());
    z.entry(name, npy_header("<f8", {static_cast<std::int64_t>(d.size())}), d.size() * 8,
            [&](auto&& sink) { sink(d.data(), d.size() * 8); });
  } else if (v.is_object()) {
    for (const auto& [k, e] : v.items()) npz_scalar(z, name + "/" + k, e);
  } else {
    throw Error(fmt::format("npz output: field {} is not a number, text or list of numbers", name));
  }
}

}  // namespace

void write_npz(detail::OutputFile& out, const std::vector<Field>& fields, NpzRegions* in_place) {
  NpzOut z(out);
  for (const Field& f : fields) {
    if (f.reserved >= 0) {
      if (!in_place) throw Error(fmt::format("npz output: field {} names a reserved array of another writer", f.name));
      z.adopt(in_place->finish(static_cast<std::size_t>(f.reserved)));
      continue;
    }
    switch (f.kind) {
      case Field::Kind::array: {
        const auto bytes = static_cast<std::uint64_t>(numel(f.shape)) * 8;
        z.entry(f.name, npy_header("<f8", f.shape), bytes,
                [&](auto&& sink) { each_block(f, [&](const double* v, std::int64_t c) { sink(v, c * 8); }); });
        break;
      }
      case Field::Kind::integer: npz_scalar(z, f.name, f.integer); break;
      case Field::Kind::boolean: npz_scalar(z, f.name, f.integer != 0); break;
      case Field::Kind::text: npz_scalar(z, f.name, f.text); break;
      case Field::Kind::object: npz_scalar(z, f.name, f.object); break;
    }
  }
  z.finish();
}

}  // namespace jx::dlm
