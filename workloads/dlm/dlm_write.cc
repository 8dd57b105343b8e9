#include "workloads/dlm/dlm_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/backends/backend.h"
#include "workloads/dlm/dlm_npz.h"
#include "workloads/dlm/dlm_output_file.h"

namespace jx::dlm {

using detail::numel;

OutputFormat output_format(const std::string& format, const std::string& path) {
  if (format == "json") return OutputFormat::json;
  if (format == "npz") return OutputFormat::npz;
  if (!format.empty()) throw Error(fmt::format("--format {}: expected json or npz", format));
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".npz" ? OutputFormat::npz : OutputFormat::json;
}

namespace {

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

namespace {

using detail::each_block;
using detail::OutputFile;

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
void put_json_array(OutputFile& out, const Field& f, bool pretty) {
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

void write_json(OutputFile& out, const std::vector<Field>& fields, bool pretty) {
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
  if (npz_)
    npz_->allocate();
  else
    regions_ = std::make_unique<RegionFile>(total, path_);
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
    detail::OutputFile out(tmp_, npz_ ? npz_->end() : 0);
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
