#include "workloads/dlm/dlm_io.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace jx::dlm {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& name, const std::string& what) { throw ShapeError(fmt::format("{}: {}", name, what)); }

std::vector<double> numbers(const json& j, const std::string& name, const std::string& field, bool allow_null) {
  std::vector<double> v;
  auto one = [&](const json& e, std::size_t i) -> double {
    if (e.is_null() && allow_null) return NAN;
    if (e.is_string() && allow_null && (e == "NaN" || e == "nan")) return NAN;
    if (!e.is_number()) bad(name, fmt::format("field '{}'{} is not a number", field, j.is_array() ? fmt::format("[{}]", i) : ""));
    return e.get<double>();
  };
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) v.push_back(one(j[i], i));
  else v.push_back(one(j, 0));
  return v;
}

Input from_json(const json& j, const std::string& name) {
  if (!j.is_object()) bad(name, "expected a JSON object with fields y, s, w");
  for (const char* f : {"y", "s", "w"})
    if (!j.contains(f)) bad(name, fmt::format("missing field '{}'", f));
  Input in;
  in.y = numbers(j["y"], name, "y", true);
  in.s = numbers(j["s"], name, "s", false);
  in.w = numbers(j["w"], name, "w", false);
  if (j.contains("options")) {
    const json& o = j["options"];
    if (!o.is_object()) bad(name, "field 'options' must be an object");
    auto integer = [&](const char* f, int dflt) {
      if (!o.contains(f)) return dflt;
      if (!o[f].is_number_integer()) bad(name, fmt::format("field 'options.{}' must be an integer", f));
      return o[f].get<int>();
    };
    in.options.order = integer("order", 1);
    in.options.trig = integer("trig", 0);
    in.options.fullseas = integer("fullseas", 0) != 0;
    in.options.ns = integer("ns", 12);
    if (o.contains("arphi")) in.options.arphi = numbers(o["arphi"], name, "options.arphi", false);
  }
  validate(in, name);
  return in;
}

}  // namespace

void validate(const Input& in, const std::string& name) {
  if (in.y.empty()) bad(name, "field 'y' is empty");
  if (in.s.empty()) bad(name, "no observation std 's' (give it in the file or with --s)");
  if (in.w.empty()) bad(name, "no process stds 'w' (give them in the file or with --w)");
  if (in.s.size() != 1 && in.s.size() != in.y.size())
    bad(name, fmt::format("field 's' has {} values; expected 1 or one per observation ({})", in.s.size(), in.y.size()));
  for (double s : in.s)
    if (!(s > 0)) bad(name, "field 's' must hold positive standard deviations");
  for (double w : in.w)
    if (!(w >= 0)) bad(name, "field 'w' must hold non-negative standard deviations");
  if (in.options.fullseas && in.options.trig > 0) bad(name, "options 'fullseas' and 'trig' exclude each other");
  try {
    auto [G, F] = system_matrices(in.options);
    if (static_cast<std::int64_t>(in.w.size()) > G.shape()[0])
      bad(name, fmt::format("field 'w' has {} values but the model has {} states", in.w.size(), G.shape()[0]));
  } catch (const ShapeError& e) {
    if (std::string(e.what()).rfind(name, 0) == 0) throw;
    bad(name, fmt::format("inconsistent options: {}", e.what()));
  }
}

namespace {

Input from_csv(const std::string& text, const std::string& name) {
  Input in;
  std::istringstream ss(text);
  std::string line;
  int no = 0;
  while (std::getline(ss, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.find(',') != std::string::npos) bad(name, fmt::format("line {}: CSV input must have one column", no));
    if (line == "NaN" || line == "nan" || line == "NA") {
      in.y.push_back(NAN);
      continue;
    }
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(line, &used);
    } catch (const std::exception&) {
      if (no == 1 && in.y.empty()) continue;  // a header
      bad(name, fmt::format("line {}: '{}' is not a number", no, line));
    }
    if (used != line.size()) bad(name, fmt::format("line {}: '{}' is not a number", no, line));
    in.y.push_back(v);
  }
  if (in.y.empty()) bad(name, "no observations");
  return in;  // s and w come from the command line
}

json column(const Array& a) {
  json j = json::array();
  for (double v : a.to_vector<double>()) j.push_back(std::isnan(v) ? json(nullptr) : json(v));
  return j;
}

// Row-major nested lists of an array, with NaN as null.
json nested(const std::vector<double>& v, const Shape& s, std::size_t dim, std::size_t& pos) {
  json j = json::array();
  for (std::int64_t i = 0; i < s[dim]; ++i) {
    if (dim + 1 == s.size()) {
      const double x = v[pos++];
      j.push_back(std::isnan(x) ? json(nullptr) : json(x));
    } else {
      j.push_back(nested(v, s, dim + 1, pos));
    }
  }
  return j;
}
json tensor(const Array& a) {
  if (a.ndim() == 0) return a.item<double>();
  std::size_t pos = 0;
  return nested(a.to_vector<double>(), a.shape(), 0, pos);
}

}  // namespace

Input parse_input(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (text[first] == '{' || text[first] == '['))
      bad(name, "invalid JSON");
    return from_csv(text, name);
  }
  return from_json(j, name);
}

Input read_input(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw ShapeError(fmt::format("{}: cannot open the input file", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_input(ss.str(), path);
}

json to_json(const Fit& f) {
  json j;
  j["xf"] = tensor(f.xf);
  j["Cf"] = tensor(f.Cf);
  j["x"] = tensor(f.x);
  j["C"] = tensor(f.C);
  j["xstd"] = tensor(f.xstd);
  j["G"] = tensor(f.G);
  j["F"] = tensor(f.F);
  j["W"] = tensor(f.W);
  j["y"] = column(f.y);
  j["V"] = column(f.V);
  j["x0"] = tensor(f.x0);
  j["C0"] = tensor(f.C0);
  for (const auto& [k, a] : {std::pair{"yhat", f.yhat}, {"ystd", f.ystd}, {"resid0", f.resid0}, {"resid", f.resid},
                             {"v", f.v}, {"Cp", f.Cp}, {"resid2", f.resid2}})
    j[k] = column(a);
  j["lik"] = f.lik;
  j["s2"] = f.s2;
  j["mse"] = f.mse;
  j["mape"] = f.mape;
  j["ssy"] = f.ssy;
  j["nobs"] = f.nobs;
  j["XX"] = json::array();  // covariates: none
  j["class"] = "dlmfit";
  return j;
}

json to_json(const Forecast& f) {
  return json{{"x", tensor(f.x)}, {"C", tensor(f.C)}, {"yhat", column(f.yhat)}, {"ystd", column(f.ystd)}};
}

}  // namespace jx::dlm
