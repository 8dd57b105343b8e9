#include "workloads/dlm/dlm_io.h"

#include "core/backends/huge_arena.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <cmath>
#include <cstdint>
#include <simdjson.h>
#include <thread>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jx::dlm {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw ShapeError(fmt::format("{}: {}", name, what));
}

std::vector<double> numbers(const json& j, const std::string& name, const std::string& field, bool allow_null) {
  std::vector<double> v;
  v.reserve(j.is_array() ? j.size() : 1);
  auto one = [&](const json& e, std::size_t i) -> double {
    if (e.is_number_float() && std::isfinite(e.get<double>()))
      return e.get<double>();  // the common case, no message built
    const std::string at = j.is_array() ? fmt::format("[{}]", i) : "";
    if (e.is_null() && allow_null) return NAN;
    if (e.is_string() && allow_null && (e == "NaN" || e == "nan" || e == "NA")) return NAN;
    if (!e.is_number()) bad(name, fmt::format("field '{}'{} is not a number", field, at));
    const double x = e.get<double>();
    if (!std::isfinite(x)) bad(name, fmt::format("field '{}'{} is not finite ({})", field, at, x));
    return x;
  };
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) v.push_back(one(j[i], i));
  else
    v.push_back(one(j, 0));
  return v;
}

// The options the toolbox (dlmfit's options struct) and dlm-js (DlmOptions) name, each under
// both spellings: {toolbox, dlm-js}.
struct OptionName {
  const char* toolbox;
  const char* js;
};
constexpr OptionName kOptions[] = {{"order", "order"},
                                   {"trig", "harmonics"},
                                   {"fullseas", "fullSeasonal"},
                                   {"ns", "seasonLength"},
                                   {"arphi", "arCoefficients"}};

std::string known_options() {
  std::string k;
  for (const auto& o : kOptions)
    k += fmt::format("{}{}{}", k.empty() ? "" : ", ", o.toolbox,
                     std::string(o.js) != o.toolbox ? fmt::format(" ({})", o.js) : "");
  return k;
}

// The value of an option given under either spelling; both with different values is an error.
const json* option(const json& o, const OptionName& n, const std::string& name) {
  const json* a = o.contains(n.toolbox) ? &o[n.toolbox] : nullptr;
  const json* b = std::string(n.js) != n.toolbox && o.contains(n.js) ? &o[n.js] : nullptr;
  if (a && b && *a != *b)
    bad(name, fmt::format("options '{}' and '{}' name the same option with different values", n.toolbox, n.js));
  return a ? a : b;
}

Options options_from(const json& o, const std::string& name) {
  if (!o.is_object()) bad(name, "field 'options' must be an object");
  for (const auto& [key, value] : o.items()) {
    bool known = false;
    for (const auto& n : kOptions) known = known || key == n.toolbox || key == n.js;
    if (!known) bad(name, fmt::format("unknown option '{}' (known: {})", key, known_options()));
  }
  Options r;
  auto integer = [&](const OptionName& n, int dflt) {
    const json* v = option(o, n, name);
    if (!v) return dflt;
    if (v->is_boolean()) return v->get<bool>() ? 1 : 0;
    if (!v->is_number_integer())
      bad(name, fmt::format("option '{}' must be an integer", o.contains(n.toolbox) ? n.toolbox : n.js));
    return v->get<int>();
  };
  r.order = integer(kOptions[0], 1);
  r.trig = integer(kOptions[1], 0);
  r.fullseas = integer(kOptions[2], 0) != 0;
  r.ns = integer(kOptions[3], 12);
  if (const json* v = option(o, kOptions[4], name)) r.arphi = numbers(*v, name, "options.arphi", false);
  return r;
}

// Time labels: accepted when they step by one (the filter's unit time step), else refused.
void check_times(const json& t, std::size_t n, const std::string& name) {
  const std::vector<double> v = numbers(t, name, "t", false);
  if (v.size() != n) bad(name, fmt::format("field 't' has {} values; expected one per observation ({})", v.size(), n));
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] - v[i - 1] != 1)
      bad(name,
          fmt::format("field 't' steps from {} to {} at [{}]: only unit time steps are supported", v[i - 1], v[i], i));
}

// Rows of finite numbers, each with the same count (covariates).
std::vector<std::vector<double>> rows_of(const json& j, const std::string& name, const std::string& field) {
  if (!j.is_array() || j.empty())
    bad(name, fmt::format("field '{}' must be a non-empty array of rows (one per step)", field));
  std::vector<std::vector<double>> r;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", field, i);
    if (!j[i].is_array() || j[i].empty()) bad(name, fmt::format("field '{}' must be a non-empty array of numbers", at));
    r.push_back(numbers(j[i], name, at, false));
    if (r.back().size() != r.front().size())
      bad(name, fmt::format("field '{}' has {} columns; '{}[0]' has {}", at, r.back().size(), field, r.front().size()));
  }
  return r;
}

// A field under either of its names (the toolbox demos' yy/ss for y/s).
const json* either(const json& j, const char* a, const char* b, const std::string& name) {
  if (j.contains(a) && j.contains(b)) bad(name, fmt::format("fields '{}' and '{}' are the same field: give one", a, b));
  return j.contains(a) ? &j[a] : j.contains(b) ? &j[b] : nullptr;
}

Input from_json(const json& j, const std::string& name) {
  if (!j.is_object()) bad(name, "expected a JSON object with fields y, s, w");
  // ys, ym: the scale and mean the toolbox's demos standardized yy with (bookkeeping for the
  // plots, no part of the model)
  for (const auto& [key, value] : j.items())
    if (key != "y" && key != "yy" && key != "s" && key != "ss" && key != "w" && key != "options" && key != "t" &&
        key != "X" && key != "X_forecast" && key != "ys" && key != "ym")
      bad(name, fmt::format("unknown field '{}' (known: y or yy, s or ss, w, X, X_forecast, options, t, ys, ym)", key));
  const json* y = either(j, "y", "yy", name);
  const json* s = either(j, "s", "ss", name);
  if (!y) bad(name, "missing field 'y'");
  if (!s) bad(name, "missing field 's'");
  if (!j.contains("w")) bad(name, "missing field 'w'");
  Input in;
  in.y = numbers(*y, name, "y", true);
  in.s = numbers(*s, name, "s", false);
  in.w = numbers(j["w"], name, "w", false);
  if (j.contains("X")) in.X = rows_of(j["X"], name, "X");
  if (j.contains("X_forecast")) in.X_forecast = rows_of(j["X_forecast"], name, "X_forecast");
  if (j.contains("t")) check_times(j["t"], in.y.size(), name);
  if (j.contains("options")) in.options = options_from(j["options"], name);
  validate(in, name);
  return in;
}

// "order 1: 2 trend states, trig 2 with ns 12: 4 seasonal states" for a model-size message; the
// seasonal count is what system_matrices builds beside the trend and AR blocks.
std::string model_states(const Options& o, std::int64_t m) {
  const std::int64_t trend = o.order + 1, ar = static_cast<std::int64_t>(o.arphi.size()), seasonal = m - trend - ar;
  std::string s = fmt::format("order {}: {} trend states", o.order, trend);
  if (seasonal > 0)
    s += fmt::format(", {} with ns {}: {} seasonal states", o.fullseas ? "fullseas" : fmt::format("trig {}", o.trig),
                     o.ns, seasonal);
  if (ar > 0) s += fmt::format(", arphi: {} AR states", ar);
  return s;
}

}  // namespace

void validate(const Input& in, const std::string& name) {
  if (in.y.empty()) bad(name, "field 'y' is empty");
  if (in.s.empty()) bad(name, "no observation std 's' (give it in the file or with --s)");
  if (in.w.empty()) bad(name, "no process stds 'w' (give them in the file or with --w)");
  if (in.s.size() != 1 && in.s.size() != in.y.size())
    bad(name, fmt::format("field 's' has {} values; expected 1 or one per observation ({})", in.s.size(), in.y.size()));
  for (double y : in.y)
    if (std::isinf(y)) bad(name, "field 'y' holds an infinite value (missing values are NaN, null or empty)");
  if (std::all_of(in.y.begin(), in.y.end(), [](double y) { return std::isnan(y); }))
    bad(name, fmt::format("field 'y' has no observed value (all {} are missing)", in.y.size()));
  for (double s : in.s)
    if (!(s > 0) || !std::isfinite(s))
      bad(name, fmt::format("field 's' must hold positive finite standard deviations (got {})", s));
  for (double w : in.w)
    if (!(w >= 0) || !std::isfinite(w))
      bad(name, fmt::format("field 'w' must hold non-negative finite standard deviations (got {})", w));
  if (in.options.fullseas && in.options.trig > 0) bad(name, "options 'fullseas' and 'trig' exclude each other");
  if (!in.X.empty() && in.X.size() != in.y.size())
    bad(name, fmt::format("field 'X' has {} rows; expected one per observation ({})", in.X.size(), in.y.size()));
  if (!in.X_forecast.empty() && (in.X.empty() || in.X_forecast.front().size() != in.X.front().size()))
    bad(name, in.X.empty() ? std::string("field 'X_forecast' is given for a model without covariates (no 'X')")
                           : fmt::format("field 'X_forecast' has {} columns; 'X' has {}", in.X_forecast.front().size(),
                                         in.X.front().size()));
  try {
    auto [G, F] = system_matrices(in.options);
    if (static_cast<std::int64_t>(in.w.size()) > G.shape()[0])
      bad(name, fmt::format("field 'w' has {} values but the model has {} states ({})", in.w.size(), G.shape()[0],
                            model_states(in.options, G.shape()[0])));
  } catch (const ShapeError& e) {
    if (std::string(e.what()).rfind(name, 0) == 0) throw;
    bad(name, fmt::format("inconsistent options: {}", e.what()));
  }
}

namespace {

// A plain decimal [-]digits[.digits] at b (what a CSV column of measurements holds) read exactly
// as from_chars reads it, fast: with at most 19 digits whose value w is at most 2^53 and at most
// 22 after the point, w and 10^k are exact doubles and w / 10^k is one correctly rounded
// division (Clinger's fast path). Returns the end of the number, or nullptr for anything else
// (an exponent, more digits, no digit): from_chars reads those.
const char* decimal_number(const char* b, const char* e, double& v) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = b != e && *b == '-';
  const char* p = b + (negative ? 1 : 0);
  std::uint64_t w = 0;
  int digits = 0, after_point = -1;  // -1: no point seen
  for (; p != e; ++p) {
    if (*p >= '0' && *p <= '9') {
      if (++digits > 19) return nullptr;
      w = w * 10 + static_cast<std::uint64_t>(*p - '0');
      if (after_point >= 0) ++after_point;
    } else if (*p == '.' && after_point < 0) {
      after_point = 0;
    } else {
      break;
    }
  }
  if (digits == 0 || (p != e && (*p == 'e' || *p == 'E')) || w > (std::uint64_t{1} << 53) || after_point > 22)
    return nullptr;
  const double x = static_cast<double>(w) / kPow10[after_point < 0 ? 0 : after_point];
  v = negative ? -x : x;
  return p;
}

// The values of some consecutive lines of a one-column CSV, the first of them line `no0` + 1,
// written to out[0, ...): one per line (a blank line NaN) but a header (line 1 when it is not a
// number). Returns how many were written and how many of those are the blank lines at the end
// (missing values when a value follows, else the file's end).
struct CsvPart {
  std::size_t written = 0, trailing_blank = 0;
};

CsvPart csv_lines(std::string_view text, int no0, const std::string& name, double* out) {
  CsvPart part;
  int no = no0;
  auto trim = [](std::string_view l) {
    const auto a = l.find_first_not_of(" \t\r"), b = l.find_last_not_of(" \t\r");
    return a == std::string_view::npos ? std::string_view() : l.substr(a, b - a + 1);
  };
  auto put = [&](double v, bool blank) {
    out[part.written++] = v;
    part.trailing_blank = blank ? part.trailing_blank + 1 : 0;
  };
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++no;
    // the common line, a finite number alone (trailing blanks allowed): read at once
    double fast = 0;
    const char* end_of_number = decimal_number(raw.data(), raw.data() + raw.size(), fast);
    if (!end_of_number) {
      const auto fr = std::from_chars(raw.data(), raw.data() + raw.size(), fast);
      end_of_number = fr.ec == std::errc() && std::isfinite(fast) ? fr.ptr : nullptr;
    }
    if (end_of_number && raw.find_first_not_of(" \t\r", static_cast<std::size_t>(end_of_number - raw.data())) ==
                             std::string_view::npos) {
      put(fast, false);
      continue;
    }
    const std::string_view line = trim(raw);
    if (line.find(',') != std::string_view::npos) bad(name, fmt::format("line {}: CSV input must have one column", no));
    if (line.empty()) {
      put(NAN, true);
      continue;
    }
    double v = NAN;
    if (line != "NaN" && line != "nan" && line != "NA") {
      // from_chars: locale-free, and no leading '+' (which stod took): a '+' is skipped here
      const std::string_view num = line.front() == '+' ? line.substr(1) : line;
      const auto r = std::from_chars(num.data(), num.data() + num.size(), v);
      if (r.ec == std::errc::result_out_of_range) bad(name, fmt::format("line {}: '{}' is out of range", no, line));
      if (r.ec != std::errc() || r.ptr != num.data() + num.size()) {
        if (no == 1) continue;  // a header
        bad(name, fmt::format("line {}: '{}' is not a number", no, line));
      }
      if (!std::isfinite(v))
        bad(name, fmt::format("line {}: '{}' is not finite (missing values are empty, NaN or NA)", no, line));
    }
    put(v, false);
  }
  return part;
}

// One column of y. Blank lines and blank cells are missing values (as NaN, NA and null are),
// except blank lines at the end of the file; a UTF-8 byte-order mark and a first line that is
// not a number (a header) are skipped; infinities are refused. A large file is read in two
// halves at once, split at a line break, each into its own part of y (the first half's error,
// if any, is the one reported).
constexpr std::size_t kCsvSplitBytes = std::size_t{256} << 10;
Input from_csv(std::string_view text, const std::string& name) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.remove_prefix(3);
  const std::size_t cut = text.size() < kCsvSplitBytes ? std::string_view::npos : text.find('\n', text.size() / 2);
  const std::string_view first = cut == std::string_view::npos ? text : text.substr(0, cut + 1),
                         second = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
  // every line gives at most one value: y holds them all, the second half's after the first's
  const std::size_t lines_a = static_cast<std::size_t>(std::count(first.begin(), first.end(), '\n')) + 1,
                    lines_b = static_cast<std::size_t>(std::count(second.begin(), second.end(), '\n')) + 1;
  Input in;
  in.y.resize(lines_a + lines_b);
  CsvPart a, b;
  if (second.empty()) {
    a = csv_lines(first, 0, name, in.y.data());
  } else {
    std::exception_ptr b_error;
    std::thread t([&] {
      try {
        b = csv_lines(second, static_cast<int>(lines_a - 1), name, in.y.data() + lines_a);
      } catch (...) {
        b_error = std::current_exception();
      }
    });
    try {
      a = csv_lines(first, 0, name, in.y.data());
    } catch (...) {
      t.join();
      throw;
    }
    t.join();
    if (b_error) std::rethrow_exception(b_error);
  }
  std::size_t n = a.written;
  if (b.written > b.trailing_blank) {  // the second half has values: close the gap before them
    std::copy(in.y.begin() + static_cast<std::ptrdiff_t>(lines_a),
              in.y.begin() + static_cast<std::ptrdiff_t>(lines_a + b.written),
              in.y.begin() + static_cast<std::ptrdiff_t>(n));
    n += b.written - b.trailing_blank;
  } else {
    n -= a.trailing_blank;
  }
  in.y.resize(n);
  if (in.y.empty()) bad(name, "no observations");
  return in;  // s and w come from the command line
}

}  // namespace

namespace {
// simdjson's document as nlohmann values (the checks below read those). simdjson parses the
// numbers (exactly rounded) at several hundred MB/s, where nlohmann's lexer took 14 ms for the
// 102400 numbers of a series; nesting deeper than kMaxDepth is refused.
constexpr int kMaxDepth = 64;
json to_nlohmann(simdjson::dom::element e, int depth, const std::string& name) {
  if (depth > kMaxDepth) bad(name, fmt::format("nested deeper than {} levels", kMaxDepth));
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: {
      simdjson::dom::array a;
      if (e.get(a) != simdjson::SUCCESS) break;
      json j = json::array();
      j.get_ref<json::array_t&>().reserve(a.size());
      for (simdjson::dom::element x : a) j.push_back(to_nlohmann(x, depth + 1, name));
      return j;
    }
    case simdjson::dom::element_type::OBJECT: {
      simdjson::dom::object o;
      if (e.get(o) != simdjson::SUCCESS) break;
      json j = json::object();
      for (simdjson::dom::key_value_pair kv : o) j[std::string(kv.key)] = to_nlohmann(kv.value, depth + 1, name);
      return j;
    }
    case simdjson::dom::element_type::INT64: return json(std::int64_t(e));
    case simdjson::dom::element_type::UINT64: return json(std::uint64_t(e));
    case simdjson::dom::element_type::DOUBLE: return json(double(e));
    case simdjson::dom::element_type::STRING: return json(std::string(std::string_view(e)));
    case simdjson::dom::element_type::BOOL: return json(bool(e));
    case simdjson::dom::element_type::NULL_VALUE: return json(nullptr);
  }
  bad(name, "invalid JSON");
}
}  // namespace

namespace {
Input parse_text(std::string_view text, const std::string& name) {
  // JSON when the first character (after a UTF-8 byte-order mark) opens an object or a list
  const std::string_view body = text.substr(text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0);
  const auto first = body.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (body[first] != '{' && body[first] != '[')) return from_csv(text, name);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto err = parser.parse(body.data(), body.size()).get(doc); err != simdjson::SUCCESS) {
    if (err == simdjson::DEPTH_ERROR) bad(name, fmt::format("nested deeper than {} levels", kMaxDepth));
    const std::string why = simdjson::error_message(err);
    bad(name, fmt::format("invalid JSON ({})", why));
  }
  return from_json(to_nlohmann(doc, 0, name), name);
}

}  // namespace

Input parse_input(const std::string& text, const std::string& name) { return parse_text(text, name); }

// The whole file read with read(2): into a buffer of its size and one byte more for a regular
// file (not zero-filled first; the spare byte lets the read that finds the end return 0 without
// a full buffer first growing and copying it), else (a pipe) to its end.
Input read_input(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ShapeError(fmt::format("{}: cannot open the input file", path));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) throw ShapeError(fmt::format("{}: cannot open the input file", path));
  if (S_ISDIR(st.st_mode)) throw ShapeError(fmt::format("{}: is a directory, not an input file", path));
  std::size_t cap =
      S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : std::size_t{1} << 16;
  // from huge pages: a 1.2 MB file read into fresh 4 KB pages faults 300 of them (HugeArena)
  HugeArena pages;
  auto* buf = reinterpret_cast<char*>(pages.take(cap));
  std::size_t size = 0;
  for (;;) {
    if (buf == nullptr) throw ShapeError(fmt::format("{}: out of memory reading {} bytes", path, cap));
    if (size == cap) {  // a pipe, or a file that grew
      auto* bigger = reinterpret_cast<char*>(pages.take(cap * 2));
      if (bigger) std::copy(buf, buf + size, bigger);
      pages.give_back(reinterpret_cast<std::byte*>(buf), cap);
      buf = bigger;
      cap *= 2;
      continue;
    }
    const ssize_t got = ::read(fd, buf + size, cap - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw ShapeError(fmt::format("{}: read failed", path));
    if (got == 0) break;
    size += static_cast<std::size_t>(got);
  }
  return parse_text(std::string_view(buf, size), path);
}

std::vector<Field> fields(const Fit& f) {
  std::vector<Field> r;
  for (const auto& [k, a] : {std::pair{"xf", &f.xf},
                             {"Cf", &f.Cf},
                             {"x", &f.x},
                             {"C", &f.C},
                             {"xstd", &f.xstd},
                             {"G", &f.G},
                             {"F", &f.F},
                             {"W", &f.W},
                             {"y", &f.y},
                             {"V", &f.V},
                             {"x0", &f.x0},
                             {"C0", &f.C0},
                             {"yhat", &f.yhat},
                             {"ystd", &f.ystd},
                             {"resid0", &f.resid0},
                             {"resid", &f.resid},
                             {"v", &f.v},
                             {"Cp", &f.Cp},
                             {"resid2", &f.resid2}})
    r.push_back(Field::array(k, *a));
  summary_fields(f, r);
  return r;
}

void summary_fields(const Fit& f, std::vector<Field>& r) {
  for (const auto& [k, v] : {std::pair{"lik", f.lik}, {"s2", f.s2}, {"mse", f.mse}, {"mape", f.mape}, {"ssy", f.ssy}})
    r.push_back(Field::number(k, v));
  r.push_back(Field::count("nobs", f.nobs));
  r.push_back(f.X ? Field::array("XX", *f.X) : Field::values("XX", {0}, {}));  // covariates, [] when none
  r.push_back(Field::string("class", "dlmfit"));
}

json to_json(const Fit& f) { return to_json(fields(f)); }

Array matrix(const std::vector<std::vector<double>>& rows) {
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const std::int64_t n = static_cast<std::int64_t>(rows.size()),
                     q = rows.empty() ? 0 : static_cast<std::int64_t>(rows.front().size());
  return np::array(flat, Shape{n, q}, DType::float64);
}

std::vector<Field> fields(const Forecast& f) {
  return {Field::array("x", f.x), Field::array("C", f.C), Field::array("yhat", f.yhat), Field::array("ystd", f.ystd)};
}

json to_json(const Forecast& f) { return to_json(fields(f)); }

}  // namespace jx::dlm
