// Program case files (the layout of ../shared/data/jaxpr: written by Python's json, so NaN and
// Infinity may appear as bare words, which JSON itself does not allow: they are read as well).
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>

#include "core/text/interp.h"
#include "core/text/load.h"

namespace jx::text {
namespace {

using nlohmann::json;

// Python's json writes NaN, Infinity, -Infinity: turn them into strings outside strings.
std::string quote_non_finite(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool in_str = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      out += c;
      if (c == '\\' && i + 1 < s.size())
        out += s[++i];
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    bool done = false;
    for (const char* w : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(w);
      if (!done && s.compare(i, n, w) == 0) {
        out += fmt::format("\"{}\"", w);
        i += n - 1;
        done = true;
      }
    }
    if (!done) out += c;
  }
  return out;
}

double number_of(const json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN" || s == "nan") return NAN;
    if (s == "Infinity" || s == "inf") return INFINITY;
    if (s == "-Infinity" || s == "-inf") return -INFINITY;
  }
  throw ParseError(fmt::format("{}: expected a number, got {}", where, v.dump()));
}

void flatten_data(const json& v, std::vector<double>& out, const std::string& where, int depth) {
  if (depth > 64) throw ParseError(fmt::format("{}: data nested deeper than 64 levels", where));
  if (v.is_array())
    for (const json& x : v) flatten_data(x, out, where, depth + 1);
  else
    out.push_back(number_of(v, where));
}

Tensor tensor_of(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j.contains("data"))
    throw ParseError(fmt::format("{}: expected {{\"dtype\", \"shape\", \"data\"}}", where));
  Tensor t;
  t.dtype = j["dtype"].get<std::string>();
  (void)dtype_of(t.dtype, where);
  std::int64_t n = 1;
  for (const json& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
      throw ParseError(fmt::format("{}: shape entries must be sizes", where));
    t.shape.push_back(d.get<std::int64_t>());
    n *= t.shape.back();
    if (n > (std::int64_t{1} << 32))
      throw ParseError(fmt::format("{}: shape {} is too large", where, shape_str(t.shape)));
  }
  flatten_data(j["data"], t.data, where, 0);
  const DType d = dtype_of(t.dtype, where);
  for (double v : t.data) {  // values the dtype holds (a conversion out of range would be undefined)
    const bool ok = d == DType::bool_     ? (v == 0 || v == 1)
                    : d == DType::int32   ? (v == std::floor(v) && std::fabs(v) <= 2147483647.0)
                    : d == DType::float32 ? (!std::isfinite(v) || std::fabs(v) <= 3.4028234663852886e38)
                                          : true;
    if (!ok) throw ParseError(fmt::format("{}: value {} does not fit {}", where, v, t.dtype));
  }
  if (static_cast<std::int64_t>(t.data.size()) != n)
    throw ParseError(
        fmt::format("{}: shape {} needs {} values, data has {}", where, shape_str(t.shape), n, t.data.size()));
  return t;
}

std::vector<Tensor> tensors_of(const json& j, const std::string& where) {
  if (!j.is_array()) throw ParseError(fmt::format("{}: expected a list of tensors", where));
  std::vector<Tensor> v;
  for (std::size_t i = 0; i < j.size(); ++i) v.push_back(tensor_of(j[i], fmt::format("{}[{}]", where, i)));
  return v;
}

json json_of(const Tensor& t) {
  json data = json::array();
  for (double v : t.data) {
    if (std::isnan(v))
      data.push_back("NaN");
    else if (std::isinf(v))
      data.push_back(v > 0 ? "Infinity" : "-Infinity");
    else if (t.dtype == "bool")
      data.push_back(v != 0);
    else if (t.dtype == "int32")
      data.push_back(static_cast<std::int64_t>(v));
    else
      data.push_back(v);
  }
  return {{"dtype", t.dtype}, {"shape", t.shape}, {"data", data}};
}

void write_json(const std::filesystem::path& p, const json& j) {
  const std::filesystem::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(1) << "\n";
    if (!f) throw Error(fmt::format("cannot write {}", tmp.string()));
  }
  std::filesystem::rename(tmp, p);
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw ParseError(fmt::format("{}: cannot open", p.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::regex& placeholder_re() {
  static const std::regex re("\\{([A-Za-z_][A-Za-z0-9_]*)\\}");
  return re;
}

}  // namespace

std::set<std::string> placeholders(const std::string& jaxpr) {
  std::set<std::string> s;
  for (auto it = std::sregex_iterator(jaxpr.begin(), jaxpr.end(), placeholder_re()); it != std::sregex_iterator(); ++it)
    s.insert((*it)[1]);
  return s;
}

std::string substitute(const std::string& jaxpr, const nlohmann::json& params) {
  std::string out;
  std::size_t at = 0;
  for (auto it = std::sregex_iterator(jaxpr.begin(), jaxpr.end(), placeholder_re()); it != std::sregex_iterator();
       ++it) {
    const std::string key = (*it)[1];
    if (!params.contains(key) || !params[key].is_number_integer())
      throw Error(fmt::format("the program's placeholder {{{}}} needs an integer parameter '{}'", key, key));
    out += jaxpr.substr(at, static_cast<std::size_t>(it->position()) - at) +
           std::to_string(params[key].get<std::int64_t>());
    at = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + jaxpr.substr(at);
}

// Every integer equal to `size` in a type's dims ("f32[100,2]"), a parameter tuple
// ("shape=(100, 2)") or a length ("length=100") becomes {key}.
std::string with_placeholder(const std::string& jaxpr, std::int64_t size, const std::string& key) {
  const std::string n = std::to_string(size), hole = "{" + key + "}";
  auto numbers = [&](const std::string& group) {
    return std::regex_replace(group, std::regex("\\b" + n + "\\b"), hole);
  };
  std::string out;
  const std::regex spans("\\[[0-9, ]*\\]|\\([0-9, ]*\\)|length=[0-9]+");
  std::size_t at = 0;
  for (auto it = std::sregex_iterator(jaxpr.begin(), jaxpr.end(), spans); it != std::sregex_iterator(); ++it) {
    out += jaxpr.substr(at, static_cast<std::size_t>(it->position()) - at) + numbers(it->str());
    at = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + jaxpr.substr(at);
}

std::string tensor_json(const Tensor& t) { return json_of(t).dump(); }

Array to_array(const Tensor& t) {
  const AVal a{dtype_of(t.dtype, t.dtype), t.shape};
  std::vector<std::byte> raw(a.bytes());
  visit_dtype(a.dtype, [&]<class T>() {
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const T v = static_cast<T>(t.data[i]);
      std::memcpy(raw.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  return array_from_bytes(raw, a);
}

Tensor to_tensor(const Array& x) { return {std::string(dtype_name(x.dtype())), x.shape(), x.to_vector<double>()}; }

CaseFile read_case_file(const std::filesystem::path& p) {
  CaseFile c;
  c.path = p;
  c.name = p.stem().string();
  const std::string src = read_all(p);
  if (p.extension() != ".json") {
    c.jaxpr = c.jaxpr_template = src;
    c.generated_inputs = true;
    return c;
  }
  json j;
  try {
    j = json::parse(quote_non_finite(src));
  } catch (const json::exception& e) {
    throw ParseError(fmt::format("{}: not JSON: {}", p.string(), e.what()));
  }
  if (!j.is_object() || !j.contains("jaxpr") || !j["jaxpr"].is_string())
    throw ParseError(fmt::format("{}: expected an object with a \"jaxpr\" string", p.string()));
  c.jaxpr = j["jaxpr"].get<std::string>();
  if (j.contains("name") && j["name"].is_string()) c.name = j["name"].get<std::string>();
  if (j.contains("inputs"))
    c.inputs = tensors_of(j["inputs"], p.string() + ": inputs");
  else
    c.generated_inputs = true;
  if (j.contains("params")) {  // sizes for the text's {name} placeholders
    if (!j["params"].is_object())
      throw ParseError(fmt::format("{}: params: expected an object of integers", p.string()));
    c.params = j["params"];
  }
  c.jaxpr_template = c.jaxpr;
  bool filled = true;
  for (const std::string& h : placeholders(c.jaxpr)) filled = filled && c.params.contains(h);
  if (filled) c.jaxpr = substitute(c.jaxpr, c.params);  // else a scenario gives the values
  if (j.contains("consts")) c.consts = tensors_of(j["consts"], p.string() + ": consts");
  if (j.contains("outputs")) c.outputs = tensors_of(j["outputs"], p.string() + ": outputs");
  for (const char* k : {"rtol", "atol"})
    if (j.contains(k)) (std::string(k) == "rtol" ? c.rtol : c.atol) = number_of(j[k], p.string() + ": " + k);
  return c;
}

std::vector<Tensor> generate_inputs(const Program& p, unsigned seed, const std::string& kind) {
  if (kind != "normal" && kind != "uniform" && kind != "iota")
    throw Error(fmt::format("inputs '{}': expected normal, uniform or iota", kind));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Tensor> v;
  for (const AVal& a : p.in_avals) {
    Tensor t{std::string(dtype_name(a.dtype)), a.shape, {}};
    const std::int64_t n = a.size();
    for (std::int64_t i = 0; i < n; ++i) {
      double x;
      if (kind == "iota")
        x = a.dtype == DType::bool_ ? static_cast<double>(i & 1) : static_cast<double>(i);  // 0, 1, 2, ... (row-major)
      else if (a.dtype == DType::bool_)
        x = static_cast<double>(rng() & 1);
      else if (!is_floating(a.dtype))
        x = static_cast<double>(rng() % 3);  // small: valid as indices into any non-trivial axis
      else
        x = kind == "normal" ? normal(rng) : uniform(rng);
      t.data.push_back(a.dtype == DType::float32 ? static_cast<double>(static_cast<float>(x)) : x);
    }
    v.push_back(std::move(t));
  }
  return v;
}

void write_outputs(const std::filesystem::path& p, const std::vector<Tensor>& outs) {
  json o = json::array();
  for (const Tensor& t : outs) o.push_back(json_of(t));
  write_json(p, {{"outputs", o}});
}

void write_case_file(const std::filesystem::path& p, const std::string& name, const std::string& jaxpr,
                     const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  json i = json::array(), o = json::array();
  for (const Tensor& t : in) i.push_back(json_of(t));
  for (const Tensor& t : out) o.push_back(json_of(t));
  write_json(p, {{"name", name}, {"jaxpr", jaxpr}, {"inputs", i}, {"outputs", o}});
}

}  // namespace jx::text
