#include "workloads/dlm/dlm_write.h"

#include <fcntl.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace jx::dlm {

OutputFormat output_format(const std::string& format, const std::string& path) {
  if (format == "json") return OutputFormat::json;
  if (format == "npz") return OutputFormat::npz;
  if (!format.empty()) throw Error(fmt::format("--format {}: expected json or npz", format));
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".npz" ? OutputFormat::npz : OutputFormat::json;
}

namespace {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

ValueReader from_vector(std::vector<double> v) {
  auto data = std::make_shared<std::vector<double>>(std::move(v));
  return [data](std::int64_t first, std::int64_t count, double* out) {
    std::memcpy(out, data->data() + first, static_cast<std::size_t>(count) * sizeof(double));
  };
}

}  // namespace

Field Field::values(std::string name, Shape shape, std::vector<double> v) {
  if (static_cast<std::int64_t>(v.size()) != numel(shape))
    throw Error(fmt::format("output field {}: {} values for shape of {}", name, v.size(), numel(shape)));
  Field f;
  f.name = std::move(name);
  f.shape = std::move(shape);
  f.read = from_vector(std::move(v));
  return f;
}
Field Field::array(std::string name, const Array& a) {
  // a float64 array in host memory is read in place (the field keeps it alive); else copied
  if (const std::byte* host = a.dtype() == DType::float64 ? a.backend().host_data(a.slot()) : nullptr) {
    Field f;
    f.name = std::move(name);
    f.shape = a.shape();
    f.read = [keep = a, data = reinterpret_cast<const double*>(host)](std::int64_t first, std::int64_t count,
                                                                      double* out) {
      std::memcpy(out, data + first, static_cast<std::size_t>(count) * sizeof(double));
    };
    return f;
  }
  return values(std::move(name), a.shape(), np::astype(a, DType::float64).to_vector<double>());
}
Field Field::number(std::string name, double v) { return values(std::move(name), {}, {v}); }
namespace {
Field of_kind(std::string name, Field::Kind k) {
  Field f;
  f.name = std::move(name);
  f.kind = k;
  return f;
}
}  // namespace
Field Field::count(std::string name, std::int64_t v) {
  Field f = of_kind(std::move(name), Kind::integer);
  f.integer = v;
  return f;
}
Field Field::string(std::string name, std::string v) {
  Field f = of_kind(std::move(name), Kind::text);
  f.text = std::move(v);
  return f;
}
Field Field::json_object(std::string name, nlohmann::json v) {
  Field f = of_kind(std::move(name), Kind::object);
  f.object = std::move(v);
  return f;
}

// ---- regions ----

class RegionFile {
 public:
  explicit RegionFile(std::int64_t values, const std::string& beside) {
    if (values * 8 <= kMemoryRegionBytes) {
      mem_.assign(static_cast<std::size_t>(values), NAN);
      return;
    }
    std::string templ = beside + ".scratch-XXXXXX";
    fd_ = ::mkstemp(templ.data());
    if (fd_ < 0)
      throw Error(fmt::format("{}: cannot create a scratch file beside the output: {}", templ, std::strerror(errno)));
    ::unlink(templ.c_str());  // gone when closed, whatever happens
  }
  ~RegionFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(std::int64_t at, const double* v, std::int64_t count) {
    if (fd_ < 0) {
      std::memcpy(mem_.data() + at, v, static_cast<std::size_t>(count) * 8);
      return;
    }
    io(at, const_cast<double*>(v), count, true);
  }
  void read(std::int64_t at, double* v, std::int64_t count) const {
    if (fd_ < 0) {
      std::memcpy(v, mem_.data() + at, static_cast<std::size_t>(count) * 8);
      return;
    }
    io(at, v, count, false);
  }

 private:
  void io(std::int64_t at, double* v, std::int64_t count, bool writing) const {
    auto* p = reinterpret_cast<char*>(v);
    std::int64_t left = count * 8, off = at * 8;
    while (left > 0) {
      const ssize_t r = writing ? ::pwrite(fd_, p, static_cast<std::size_t>(left), off)
                                : ::pread(fd_, p, static_cast<std::size_t>(left), off);
      if (r <= 0)
        throw Error(fmt::format("scratch file: {} failed: {}", writing ? "write" : "read",
                                r < 0 ? std::strerror(errno) : "end of file"));
      p += r;
      left -= r;
      off += r;
    }
  }
  std::vector<double> mem_;
  int fd_ = -1;
};

// ---- the output stream ----

namespace {

// A buffered file with the position known (npz patches CRCs into headers already written).
class Out {
 public:
  // Writes from byte `start` on (npz: after the entries written in place), truncating unless
  // start > 0.
  explicit Out(const std::string& path, std::int64_t start = 0)
      : path_(path), f_(std::fopen(path.c_str(), start > 0 ? "r+b" : "wb")), pos_(start) {
    if (!f_)
      throw Error(
          fmt::format("{}: cannot write the output file (opening {} failed: {})", path, path, std::strerror(errno)));
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    if (start > 0 && std::fseek(f_, start, SEEK_SET) != 0) fail("seek");
  }
  ~Out() {
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

// ---- json ----

void put_number(std::string& s, double v) {
  if (std::isnan(v) || std::isinf(v)) {  // JSON has no NaN: missing values are null
    s += "null";
    return;
  }
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  s.append(b, r.ptr);
}

// Nested lists, row-major: the innermost dimension on one line when pretty.
void put_json_array(Out& out, const Field& f, bool pretty) {
  const Shape& s = f.shape;
  if (!s.empty() && numel(s) == 0) {
    out.put("[]");
    return;
  }
  if (s.empty()) {
    double v;
    f.read(0, 1, &v);
    std::string t;
    put_number(t, v);
    out.put(t);
    return;
  }
  const std::size_t r = s.size();
  std::vector<std::int64_t> idx(r, 0);
  std::string text;
  text.reserve(1 << 21);
  const std::int64_t inner = s.back(), n = numel(s);
  auto open_dims = [&](std::size_t from) {  // opens dimensions from..r-1
    for (std::size_t d = from; d < r; ++d) {
      if (pretty && d > 0) text += "\n" + std::string(d + 1, ' ');
      text += '[';
    }
  };
  open_dims(0);
  std::int64_t pos = 0;
  each_block(f, [&](const double* v, std::int64_t c) {
    for (std::int64_t k = 0; k < c; ++k, ++pos) {
      if (pos % inner) text += ',';
      put_number(text, v[k]);
      if ((pos + 1) % inner == 0 && pos + 1 < n) {
        // close finished dimensions, then open the next rows
        std::size_t d = r - 1;
        text += ']';
        while (d > 0 && ++idx[d - 1] == s[d - 1]) {
          idx[d - 1] = 0;
          text += ']';
          --d;
        }
        text += ',';
        open_dims(d);
      }
    }
    if (text.size() > (1 << 20)) {
      out.put(text);
      text.clear();
    }
  });
  text += std::string(r, ']');
  out.put(text);
}

void write_json(Out& out, const std::vector<Field>& fields, bool pretty) {
  out.put("{");
  bool first = true;
  for (const Field& f : fields) {
    out.put(first ? (pretty ? "\n " : "") : (pretty ? ",\n " : ","));
    first = false;
    out.put(nlohmann::json(f.name).dump() + (pretty ? ": " : ":"));
    switch (f.kind) {
      case Field::Kind::array: put_json_array(out, f, pretty); break;
      case Field::Kind::integer: out.put(std::to_string(f.integer)); break;
      case Field::Kind::boolean: out.put(f.integer ? "true" : "false"); break;
      case Field::Kind::text: out.put(nlohmann::json(f.text).dump()); break;
      case Field::Kind::object: out.put(f.object.dump(pretty ? 1 : -1)); break;
    }
  }
  out.put(pretty ? "\n}\n" : "}");
}

// ---- npz: a zip of .npy files, stored (no compression) ----

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

struct ZipEntry {
  std::string name;
  std::uint32_t crc = 0;
  std::uint64_t size = 0, offset = 0;
};

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
  explicit NpzOut(Out& out) : out_(out) {}
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
  Out& out_;
  std::vector<ZipEntry> entries_;
};

}  // namespace

// Reserved arrays written in place in the .npz: their entries come first in the file, laid out
// at reserve() (sizes are known), each piece written once at its final offset with its CRC
// taken on the spot; commit() combines the pieces' CRCs in order (zlib's crc32_combine) and
// patches them into the local headers. Steps-last arrays are stored column-major (npy's
// fortran_order), so a chunk of steps is one contiguous run there too.
class NpzRegions {
 public:
  NpzRegions(const std::string& path, const std::string& shown)
      : shown_(shown), fd_(::open(path.c_str(), O_RDWR | O_TRUNC)) {
    if (fd_ < 0) throw Error(fmt::format("{}: cannot write the output file: {}", shown_, std::strerror(errno)));
  }
  ~NpzRegions() { ::close(fd_); }
  NpzRegions(const NpzRegions&) = delete;
  NpzRegions& operator=(const NpzRegions&) = delete;

  void add(const StepArray& a, std::int64_t steps) {
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
    r.header_crc = crc32(0L, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size()));
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
  void write(std::size_t id, std::int64_t t0, std::int64_t count, const double* v) {
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
  // Patches the CRCs in; returns the entry for the central directory.
  ZipEntry finish(std::size_t id) {
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
  std::int64_t end() const { return static_cast<std::int64_t>(end_); }

 private:
  struct Piece {
    std::int64_t t0, count;
    std::uint32_t crc;
  };
  struct Region {
    ZipEntry entry;
    std::int64_t per_step = 1, steps = 0, crc_at = 0, data_at = 0;
    uLong header_crc = 0;
    bool permute = false;
    std::vector<std::int64_t> column_major;
    std::vector<Piece> pieces;
  };
  void put(std::string_view b, std::int64_t at) {
    while (!b.empty()) {
      const ssize_t w = ::pwrite(fd_, b.data(), b.size(), at);
      if (w <= 0)
        throw Error(fmt::format("{}: write failed: {}", shown_, w < 0 ? std::strerror(errno) : "no progress"));
      b.remove_prefix(static_cast<std::size_t>(w));
      at += w;
    }
  }
  std::string shown_;
  int fd_;
  std::uint64_t end_ = 0;
  std::vector<Region> regions_;
  std::vector<double> scratch_;
};

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

void write_npz(Out& out, const std::vector<Field>& fields, NpzRegions* in_place) {
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

}  // namespace

// ---- the writer ----

ResultWriter::ResultWriter(std::string path, OutputFormat format, bool pretty)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), format_(format), pretty_(pretty) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path_.empty()) throw Error("--out: empty path");
  if (fs::is_directory(path_, ec)) throw Error(fmt::format("{}: is a directory (--out names the output file)", path_));
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error(fmt::format("{}: folder {} does not exist", path_, parent.string()));
  // writable: the temporary file is created now, before any work
  std::FILE* f = std::fopen(tmp_.c_str(), "wb");
  if (!f)
    throw Error(
        fmt::format("{}: cannot write the output file (creating {} failed: {})", path_, tmp_, std::strerror(errno)));
  std::fclose(f);
}

ResultWriter::~ResultWriter() {
  if (committed_) return;
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
}

std::vector<int> ResultWriter::reserve(const std::vector<StepArray>& arrays, std::int64_t steps) {
  if (regions_ || npz_) throw Error("ResultWriter::reserve: called twice");
  if (steps < 0) throw Error(fmt::format("ResultWriter::reserve: {} steps", steps));
  steps_ = steps;
  std::vector<int> ids;
  std::int64_t total = 0;
  if (format_ == OutputFormat::npz) npz_ = std::make_unique<NpzRegions>(tmp_, path_);
  for (const StepArray& a : arrays) {
    ids.push_back(static_cast<int>(reserved_.size()));
    reserved_.push_back({a, numel(a.inner), total});
    total += numel(a.inner) * steps;
    if (npz_) npz_->add(a, steps);
  }
  if (!npz_) regions_ = std::make_unique<RegionFile>(total, path_);
  return ids;
}

void ResultWriter::write_steps(int id, std::int64_t t0, std::int64_t count, const double* values) {
  const Reserved& r = reserved_.at(static_cast<std::size_t>(id));
  if (t0 < 0 || count < 0 || t0 + count > steps_)
    throw Error(fmt::format("ResultWriter::write_steps: steps {}..{} past the end of {} ({} steps)", t0, t0 + count,
                            r.array.name, steps_));
  if (npz_) {
    npz_->write(static_cast<std::size_t>(id), t0, count, values);
    return;
  }
  if (!r.array.steps_last) {  // [n] + inner, row-major: one run
    regions_->write(r.offset + t0 * r.per_step, values, count * r.per_step);
    return;
  }
  // inner + [n]: one run of `count` steps per inner element
  std::vector<double> run(static_cast<std::size_t>(count));
  for (std::int64_t e = 0; e < r.per_step; ++e) {
    for (std::int64_t k = 0; k < count; ++k) run[static_cast<std::size_t>(k)] = values[k * r.per_step + e];
    regions_->write(r.offset + e * steps_ + t0, run.data(), count);
  }
}

Field ResultWriter::reserved(int id) const {
  const Reserved& r = reserved_.at(static_cast<std::size_t>(id));
  Field f;
  f.name = r.array.name;
  f.shape = r.array.inner;
  if (r.array.steps_last)
    f.shape.push_back(steps_);
  else
    f.shape.insert(f.shape.begin(), steps_);
  f.reserved = id;
  if (npz_) {
    const std::string name = f.name;
    f.read = [name](std::int64_t, std::int64_t, double*) {
      throw Error(fmt::format("npz output: {} is written in place in the file; it is not read back", name));
    };
    return f;
  }
  const RegionFile* regions = regions_.get();
  const std::int64_t base = r.offset;
  f.read = [regions, base](std::int64_t first, std::int64_t count, double* out) {
    regions->read(base + first, out, count);
  };
  return f;
}

void ResultWriter::commit(const std::vector<Field>& fields) {
  {
    Out out(tmp_, npz_ ? npz_->end() : 0);
    if (format_ == OutputFormat::npz)
      write_npz(out, fields, npz_.get());
    else
      write_json(out, fields, pretty_);
    bytes_ = out.pos();
    out.close();
  }
  npz_.reset();
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw Error(fmt::format("{}: cannot replace it: {}", path_, ec.message()));
  committed_ = true;
}

nlohmann::json to_json(const std::vector<Field>& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : fields) {
    switch (f.kind) {
      case Field::Kind::integer: j[f.name] = f.integer; break;
      case Field::Kind::boolean: j[f.name] = f.integer != 0; break;
      case Field::Kind::text: j[f.name] = f.text; break;
      case Field::Kind::object: j[f.name] = f.object; break;
      case Field::Kind::array: {
        std::vector<double> v(static_cast<std::size_t>(numel(f.shape)));
        if (!v.empty()) f.read(0, static_cast<std::int64_t>(v.size()), v.data());
        std::size_t pos = 0;
        std::function<nlohmann::json(std::size_t)> nest = [&](std::size_t d) -> nlohmann::json {
          if (d == f.shape.size()) {
            const double x = v[pos++];
            return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
          }
          nlohmann::json a = nlohmann::json::array();
          for (std::int64_t i = 0; i < f.shape[d]; ++i) a.push_back(nest(d + 1));
          return a;
        };
        j[f.name] = nest(0);
      }
    }
  }
  return j;
}

}  // namespace jx::dlm
