// Loading and validating scenario files: every problem names the file, the JSON pointer of the
// offending value and the reason.
#include "scenarios/scenario.h"

#include <algorithm>
#include <filesystem>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>
#include <regex>
#include <set>

#include "core/base/errors.h"
#include "core/text/load.h"
#include "repros/program.h"
#include "core/replay/policy.h"
#include "repros/repro.h"

namespace jx::lab {
namespace {

using json = nlohmann::json;

// libstdc++'s std::regex overflows a long on a huge repetition count ({5555555554555555555}) or
// back-reference number (\\5555555554555555555), and copies a repeated atom once per count:
// counts over 1000 and back-references over 999 are refused before it compiles.
// Returns why, or "" (escapes and bracket expressions skipped).
std::string repetition_over_limit(const std::string& re) {
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char ch = re[i];
    if (ch == '\\') {  // an escape; a back-reference's number (\1) overflows the same way
      std::size_t k = i + 1;
      while (k < re.size() && std::isdigit(static_cast<unsigned char>(re[k]))) ++k;
      if (k - i - 1 > 3)
        return fmt::format("a back-reference number over 999 in the regular expression ('{}')",
                           re.substr(i, std::min<std::size_t>(k - i, 24)));
      ++i;
      continue;
    }
    if (in_class) {
      in_class = ch != ']';
      continue;
    }
    if (ch == '[') {
      in_class = true;
      continue;
    }
    if (ch != '{') continue;
    for (std::size_t j = i + 1; j < re.size() && (std::isdigit(static_cast<unsigned char>(re[j])) || re[j] == ',');
         ++j) {
      std::size_t k = j;
      while (k < re.size() && std::isdigit(static_cast<unsigned char>(re[k]))) ++k;
      if (k - j > 4 || (k > j && std::stoi(re.substr(j, k - j)) > 1000))
        return fmt::format("a repetition count over 1000 in the regular expression ('{}')",
                           re.substr(i, std::min<std::size_t>(k - i + 1, 24)));
      j = k;
      if (j >= re.size() || re[j] != ',') break;
    }
  }
  return "";
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(const std::string& ptr, const std::string& why) const {
    throw ScenarioError(fmt::format("{}: {}: {}", file_, ptr.empty() ? "/" : ptr, why));
  }
  const json& field(const json& obj, const std::string& ptr, const std::string& key, bool required) const {
    static const json null;
    if (!obj.contains(key)) {
      if (required) fail(ptr, fmt::format("missing required field '{}'", key));
      return null;
    }
    return obj[key];
  }
  std::string str(const json& obj, const std::string& ptr, const std::string& key, bool required,
                  std::string def = "") const {
    const json& v = field(obj, ptr, key, required);
    if (v.is_null()) return def;
    if (!v.is_string()) fail(ptr + "/" + key, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }
  void only(const json& obj, const std::string& ptr, std::initializer_list<const char*> keys) const {
    if (!obj.is_object()) fail(ptr, fmt::format("expected an object, got {}", obj.dump()));
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
        fail(ptr + "/" + it.key(), fmt::format("unknown field '{}' (known: {})", it.key(), fmt::join(keys, ", ")));
  }
  std::int64_t integer(const json& v, const std::string& ptr) const {
    if (!v.is_number_integer()) fail(ptr, fmt::format("expected an integer, got {}", v.dump()));
    return v.get<std::int64_t>();
  }
  double number(const json& v, const std::string& ptr) const {
    if (!v.is_number()) fail(ptr, fmt::format("expected a number, got {}", v.dump()));
    return v.get<double>();
  }
  bool boolean(const json& v, const std::string& ptr) const {
    if (!v.is_boolean()) fail(ptr, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }

  CountExpect count(const json& v, const std::string& ptr) const {
    only(v, ptr, {"exactly", "max", "growth", "log2_plus"});
    CountExpect c;
    if (v.contains("exactly")) c.exactly = integer(v["exactly"], ptr + "/exactly");
    if (v.contains("max")) c.max = integer(v["max"], ptr + "/max");
    c.growth = str(v, ptr, "growth", false);
    if (!c.growth.empty() && c.growth != "constant" && c.growth != "log2" && c.growth != "linear")
      fail(ptr + "/growth", fmt::format("'{}' is not one of constant, log2, linear", c.growth));
    if (v.contains("log2_plus")) c.log2_plus = integer(v["log2_plus"], ptr + "/log2_plus");
    return c;
  }

  Expect expect(const json& v, const std::string& ptr) const {
    only(v, ptr,
         {"error", "values", "scan_paths", "max_buffers_per_dispatch", "dispatches", "submits", "host_routines",
          "leaked_slots", "memory"});
    Expect e;
    if (v.contains("error")) e.error = error_expect(v["error"], ptr + "/error");
    if (v.contains("values")) e.values = values_expect(v["values"], ptr + "/values");
    if (v.contains("scan_paths")) e.scan_paths = scan_paths(v["scan_paths"], ptr + "/scan_paths");
    if (v.contains("max_buffers_per_dispatch"))
      e.max_buffers_per_dispatch =
          static_cast<int>(integer(v["max_buffers_per_dispatch"], ptr + "/max_buffers_per_dispatch"));
    if (v.contains("dispatches")) e.dispatches = count(v["dispatches"], ptr + "/dispatches");
    if (v.contains("submits")) e.submits = count(v["submits"], ptr + "/submits");
    if (v.contains("host_routines")) e.host_routines = integer(v["host_routines"], ptr + "/host_routines");
    if (v.contains("leaked_slots")) e.leaked_slots = integer(v["leaked_slots"], ptr + "/leaked_slots");
    if (v.contains("memory")) e.memory = memory_expect(v["memory"], ptr + "/memory");
    return e;
  }

  ErrorExpect error_expect(const json& v, const std::string& p) const {
    only(v, p, {"type", "message", "values_before"});
    ErrorExpect x;
    x.type = str(v, p, "type", false);
    x.message = str(v, p, "message", true);
    if (const std::string why = repetition_over_limit(x.message); !why.empty()) fail(p + "/message", why);
    try {
      std::regex check(x.message);
    } catch (const std::regex_error& err) {
      fail(p + "/message", fmt::format("not a valid regular expression: {}", err.what()));
    }
    if (v.contains("values_before")) x.values_before = boolean(v["values_before"], p + "/values_before");
    return x;
  }

  ValuesExpect values_expect(const json& v, const std::string& p) const {
    only(v, p, {"vs", "expected", "rtol", "atol", "differ"});
    ValuesExpect x;
    x.vs = str(v, p, "vs", false, "file");
    if (x.vs != "file" && x.vs != "cpu") fail(p + "/vs", fmt::format("'{}' is not one of file, cpu", x.vs));
    if (x.vs == "file") {
      const json& ex = field(v, p, "expected", true);
      if (!ex.is_object() || ex.empty()) fail(p + "/expected", "expected an object of named number arrays");
      for (auto it = ex.begin(); it != ex.end(); ++it) {
        if (!it->is_array() || it->empty()) fail(p + "/expected/" + it.key(), "expected a non-empty array of numbers");
        for (std::size_t i = 0; i < it->size(); ++i) number((*it)[i], fmt::format("{}/expected/{}/{}", p, it.key(), i));
      }
      x.expected = ex;
    }
    if (v.contains("rtol")) x.rtol = number(v["rtol"], p + "/rtol");
    if (v.contains("atol")) x.atol = number(v["atol"], p + "/atol");
    if (v.contains("differ")) {
      const json& d = v["differ"];
      if (!d.is_array() || d.empty()) fail(p + "/differ", "expected a non-empty array of output names");
      for (std::size_t i = 0; i < d.size(); ++i) {
        if (!d[i].is_string() || d[i].get<std::string>().empty())
          fail(fmt::format("{}/differ/{}", p, i), fmt::format("expected an output name, got {}", d[i].dump()));
        x.differ.push_back(d[i].get<std::string>());
      }
    }
    return x;
  }

  std::vector<std::string> scan_paths(const json& sp, const std::string& p) const {
    if (!sp.is_array() || sp.empty()) fail(p, "expected a non-empty array of fused, preencoded, fallback");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < sp.size(); ++i) {
      const std::string s = sp[i].is_string() ? sp[i].get<std::string>() : "";
      if (s != "fused" && s != "preencoded" && s != "fallback")
        fail(fmt::format("{}/{}", p, i), fmt::format("{} is not one of fused, preencoded, fallback", sp[i].dump()));
      out.push_back(s);
    }
    return out;
  }

  MemoryExpect memory_expect(const json& m, const std::string& p) const {
    only(m, p,
         {"after_call", "rss_growth_pct_max", "rss_growth_pct_min", "cache_within_capacity", "cache_entries_grow"});
    MemoryExpect x;
    if (m.contains("after_call")) x.after_call = integer(m["after_call"], p + "/after_call");
    if (m.contains("rss_growth_pct_max"))
      x.rss_growth_pct_max = number(m["rss_growth_pct_max"], p + "/rss_growth_pct_max");
    if (m.contains("rss_growth_pct_min"))
      x.rss_growth_pct_min = number(m["rss_growth_pct_min"], p + "/rss_growth_pct_min");
    if (m.contains("cache_within_capacity"))
      x.cache_within_capacity = boolean(m["cache_within_capacity"], p + "/cache_within_capacity");
    if (m.contains("cache_entries_grow"))
      x.cache_entries_grow = boolean(m["cache_entries_grow"], p + "/cache_entries_grow");
    return x;
  }

 private:
  std::string file_;
};

// A program workload: the file loads, every parameter fills a {placeholder} of its text and
// every placeholder gets a value (from params or the sweep).
void check_program(const Reader& r, const Scenario& s) {
  text::CaseFile cf;
  try {
    cf = text::read_case_file(s.program);
  } catch (const std::exception& e) {
    r.fail("/workload/program", e.what());
  }
  const auto holes = placeholders(cf.jaxpr_template);
  for (auto it = s.params.begin(); it != s.params.end(); ++it)
    if (!holes.count(it.key()))
      r.fail("/workload/params/" + it.key(),
             fmt::format("the program has no placeholder {{{}}} for parameter '{}'", it.key(), it.key()));
  if (!s.sweep_key.empty() && !holes.count(s.sweep_key))
    r.fail("/workload/sweep/" + s.sweep_key,
           fmt::format("the program has no placeholder {{{}}} to sweep", s.sweep_key));
  json values = cf.params;  // the file's own sizes, then the scenario's
  for (auto it = s.params.begin(); it != s.params.end(); ++it) values[it.key()] = it.value();
  if (!s.sweep_key.empty()) values[s.sweep_key] = s.sweep_values.front();
  for (const std::string& h : holes)
    if (!values.contains(h))
      r.fail("/workload/params", fmt::format("the program's placeholder {{{}}} has no value (params or sweep)", h));
  try {
    (void)text::load_program(substitute(cf.jaxpr_template, values), s.program);
  } catch (const std::exception& e) {
    r.fail("/workload/program", e.what());
  }
}

// Parameters a compiled-in workload does not read, and transforms it does not run under, are
// refused like unknown fields: a scenario that sets them would otherwise run on the defaults.
void check_workload_fields(const Reader& r, const Scenario& s) {
  if (!s.program.empty()) return check_program(r, s);
  const Repro& rp = repro(s.workload);
  auto known = [&](const std::string& k) {
    return std::find(rp.params.begin(), rp.params.end(), k) != rp.params.end();
  };
  const std::string names = fmt::format("{}", fmt::join(rp.params, ", "));
  for (auto it = s.params.begin(); it != s.params.end(); ++it)
    if (!known(it.key()))
      r.fail("/workload/params/" + it.key(),
             fmt::format("workload {} has no parameter '{}' (known: {})", s.workload, it.key(), names));
  if (!s.sweep_key.empty() && !known(s.sweep_key))
    r.fail("/workload/sweep/" + s.sweep_key,
           fmt::format("workload {} has no parameter '{}' (known: {})", s.workload, s.sweep_key, names));
  if (!rp.transforms.empty() &&
      std::find(rp.transforms.begin(), rp.transforms.end(), s.transform) == rp.transforms.end())
    r.fail("/transform", fmt::format("workload {} runs under {} only, not {}", s.workload,
                                     fmt::join(rp.transforms, " or "), s.transform));
  if (rp.check)
    if (const std::string why = rp.check(s.params, s.transform); !why.empty())
      r.fail("/transform", fmt::format("workload {}: {}", s.workload, why));
}

}  // namespace

Scenario load_scenario(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ScenarioError(fmt::format("{}: cannot open the file", path));
  std::stringstream text;
  text << f.rdbuf();
  return parse_scenario(text.str(), path);
}

namespace {

const std::set<std::string>& known_transforms() {
  static const std::set<std::string> t{"eager", "jit", "value_and_grad", "jit(value_and_grad)"};
  return t;
}

// The document; scenario files are a few levels deep, so a deeper one is refused while it is read
// (printing a 100,000-deep array into the error overflowed the stack).
json parse_document(const std::string& text, const std::string& path) {
  constexpr int kMaxDepth = 64;
  auto depth_guard = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) throw ScenarioError(fmt::format("{}: /: nested deeper than {} levels", path, kMaxDepth));
    return true;
  };
  try {
    return json::parse(text, depth_guard);
  } catch (const json::exception& e) {  // syntax errors, and numbers out of range (out_of_range 406)
    throw ScenarioError(fmt::format("{}: /: not valid JSON: {}", path, e.what()));
  }
}

// id (lowercase, the file's stem), title, source, description
void read_header(const Reader& r, const json& doc, const std::string& path, Scenario& s) {
  s.id = r.str(doc, "", "id", true);
  if (!std::regex_match(s.id, std::regex("[a-z0-9][a-z0-9-]*")))
    r.fail("/id", fmt::format("'{}' must be lowercase letters, digits and dashes", s.id));
  if (const std::string stem = std::filesystem::path(path).stem().string(); stem != s.id)
    r.fail("/id", fmt::format("'{}' must equal the file name ('{}.json')", s.id, stem));
  s.title = r.str(doc, "", "title", true);
  s.source = r.str(doc, "", "source", true);
  s.description = r.str(doc, "", "description", false);
}

// /workload: a compiled-in workload (name) or a case file (program, with inputs), its params and
// its sweep of one parameter
void read_workload(const Reader& r, const json& w, const std::string& path, Scenario& s) {
  r.only(w, "/workload", {"name", "program", "inputs", "params", "sweep"});
  if (w.contains("program") == w.contains("name"))
    r.fail("/workload", "give either a compiled-in workload (name) or a program (a case file)");
  if (w.contains("program")) {
    s.program = (std::filesystem::path(path).parent_path() / r.str(w, "/workload", "program", true))
                    .lexically_normal()
                    .string();
    s.workload = "program:" + std::filesystem::path(s.program).stem().string();
    if (w.contains("inputs")) {
      if (!w["inputs"].is_object())
        r.fail("/workload/inputs", "expected an object {seed, distribution, scale, dispose_intermediates}");
      r.only(w["inputs"], "/workload/inputs", {"seed", "distribution", "scale", "dispose_intermediates"});
      s.program_inputs = w["inputs"];
    }
  } else if (w.contains("inputs")) {
    r.fail("/workload/inputs", "only a program workload takes inputs");
  } else {
    s.workload = r.str(w, "/workload", "name", true);
  }
  if (s.program.empty() && !repros().count(s.workload)) {
    try {
      (void)repro(s.workload);
    } catch (const std::exception& e) {
      r.fail("/workload/name", e.what());
    }
  }
  if (w.contains("params")) {
    if (!w["params"].is_object()) r.fail("/workload/params", "expected an object");
    s.params = w["params"];
  }
  if (w.contains("sweep")) {
    const json& sw = w["sweep"];
    if (!sw.is_object() || sw.size() != 1)
      r.fail("/workload/sweep", "expected an object with one parameter, e.g. {\"n\": [100, 200, 400]}");
    s.sweep_key = sw.begin().key();
    if (!sw.begin()->is_array() || sw.begin()->size() < 2)
      r.fail("/workload/sweep/" + s.sweep_key, "expected an array of at least two values");
    for (const json& x : *sw.begin()) s.sweep_values.push_back(x);
  }
}

// transform, backends, limits, timeout_s
void read_run_settings(const Reader& r, const json& doc, Scenario& s) {
  s.transform = r.str(doc, "", "transform", false, "eager");
  if (!known_transforms().count(s.transform))
    r.fail("/transform",
           fmt::format("'{}' is not one of eager, jit, value_and_grad, jit(value_and_grad)", s.transform));
  check_workload_fields(r, s);
  const json& b = r.field(doc, "", "backends", true);
  if (!b.is_array() || b.empty()) r.fail("/backends", "expected a non-empty array of backend names");
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::string name = b[i].is_string() ? b[i].get<std::string>() : "";
    if (name != "cpu" && name != "native" && name != "vulkan")
      r.fail(fmt::format("/backends/{}", i), fmt::format("{} is not one of cpu, native, vulkan", b[i].dump()));
    s.backends.push_back(name);
  }
  s.limits = r.str(doc, "", "limits", false, "webgpu");
  if (s.limits != "webgpu" && s.limits != "device")
    r.fail("/limits", fmt::format("'{}' is not one of webgpu, device", s.limits));
  if (doc.contains("timeout_s")) {
    s.timeout_s = r.number(doc["timeout_s"], "/timeout_s");
    if (!(s.timeout_s > 0)) r.fail("/timeout_s", "expected a positive number of seconds");
  }
}

// The "profile" of the object at p: a replay profile's name (into `name`) and the profile.
const replay::Profile& read_profile(const Reader& r, const json& e, const std::string& p, std::string& name) {
  name = r.str(e, p, "profile", true);
  try {
    return replay::profile(name);
  } catch (const std::exception& ex) {
    r.fail(p + "/profile", ex.what());
  }
}

// /cases: each a replay profile and its expectations
void read_cases(const Reader& r, const json& doc, Scenario& s) {
  const json& cs = r.field(doc, "", "cases", true);
  if (!cs.is_array() || cs.empty()) r.fail("/cases", "expected a non-empty array of {profile, expect}");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::string p = fmt::format("/cases/{}", i);
    r.only(cs[i], p, {"profile", "expect"});
    Case c;
    (void)read_profile(r, cs[i], p, c.profile);
    c.expect = r.expect(r.field(cs[i], p, "expect", true), p + "/expect");
    c.expect_json = cs[i]["expect"];
    if (c.expect.dispatches && !c.expect.dispatches->growth.empty() && s.sweep_values.empty())
      r.fail(p + "/expect/dispatches/growth", "a growth expectation needs a workload sweep");
    s.cases.push_back(std::move(c));
  }
}

// /history (optional): what each historical profile's documents say happened, by transform
void read_history(const Reader& r, const json& doc, Scenario& s) {
  if (!doc.contains("history")) return;
  const json& h = doc["history"];
  if (!h.is_array() || h.empty()) r.fail("/history", "expected a non-empty array of {profile, documented}");
  for (std::size_t i = 0; i < h.size(); ++i) {
    const std::string p = fmt::format("/history/{}", i);
    r.only(h[i], p, {"profile", "documented"});
    HistoryRow row;
    if (!read_profile(r, h[i], p, row.profile).historical)
      r.fail(p + "/profile", fmt::format("'{}' is not a historical profile (v0.7.1 ...)", row.profile));
    const json& d = r.field(h[i], p, "documented", true);
    if (!d.is_object() || d.empty()) r.fail(p + "/documented", "expected an object {transform: outcome}");
    for (auto it = d.begin(); it != d.end(); ++it) {
      if (!known_transforms().count(it.key()))
        r.fail(p + "/documented/" + it.key(), fmt::format("'{}' is not a transform", it.key()));
      if (!it->is_string()) r.fail(p + "/documented/" + it.key(), fmt::format("expected a string, got {}", it->dump()));
      row.documented.emplace_back(it.key(), it->get<std::string>());
    }
    s.history.push_back(std::move(row));
  }
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& path) {
  Reader r(path);
  const json doc = parse_document(text, path);
  r.only(doc, "",
         {"$schema", "id", "title", "source", "description", "workload", "transform", "backends", "limits", "cases",
          "history", "timeout_s"});
  Scenario s;
  s.file = path;
  read_header(r, doc, path, s);
  read_workload(r, r.field(doc, "", "workload", true), path, s);
  read_run_settings(r, doc, s);
  read_cases(r, doc, s);
  read_history(r, doc, s);
  return s;
}

std::vector<Scenario> load_scenarios(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw ScenarioError(fmt::format("{}: not a directory of scenario files", dir));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json" && e.path().filename() != "scenario.schema.json")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<Scenario> out;
  for (const auto& f : files) {
    out.push_back(load_scenario(f));
    for (std::size_t i = 0; i + 1 < out.size(); ++i)
      if (out[i].id == out.back().id)
        throw ScenarioError(fmt::format("{}: /id: '{}' is also the id of {}", f, out.back().id, out[i].file));
  }
  return out;
}

}  // namespace jx::lab
