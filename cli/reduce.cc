// jxlab reduce: delta debugging of a failing case's program (C-Reduce's greedy fixpoint). The
// failure kept is the case's exception type and message (its scenario's regex when it has one,
// else the observed message with numbers masked). Each candidate runs in its own jxlab process
// (`jxlab run` on a one-case scenario in a scratch folder) with a time limit, so a candidate that
// crashes or hangs is a rejected candidate, not the reducer's own crash. Moves, repeated until
// none applies or time runs out: drop the transform (jit(value_and_grad) -> value_and_grad ->
// jit -> eager), delete an equation (its used outputs become inputs of the same type; dead
// equations go), make an input a constant (ones), shrink a dimension everywhere (to 1, 2 or
// half; scan lengths too), literals to 1 or 0, drop unused inputs, keep a single output.
// Every accepted move lowers (equations that read a variable, inputs, outputs): a fixpoint.
#include "cli/reduce.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/jaxpr_edits.h"
#include "cli/lab_commands.h"
#include "core/text/load.h"
#include "core/transform/control_internal.h"
#include "repros/program.h"
#include "scenarios/scenario.h"

namespace jx::lab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// What a candidate must still do: throw (type, message regex); for a dispatch-kind failure (type
// "scan_path"), take the scan path named by regex; (type "expect") miss the case's own
// expectations (buffers per dispatch, leaked slots, dispatch counts, ...; values are left out,
// as the program changes) with a failure matching regex (its numbers free); or (type
// "mismatch") give output `output` beyond rtol/atol of the cpu oracle running the same
// candidate (expect then holds that values check).
struct Failure {
  std::string type, regex;
  json expect;         // types "expect" and "mismatch": the expectations the candidate's case carries
  std::string output;  // type "mismatch": the output's name (out0, value, grad, ...)
  bool matches(const std::string& t, const std::string& m) const {
    return t == type && (scan_path() ? m == regex : std::regex_search(m, std::regex(regex)));
  }
  bool scan_path() const { return type == "scan_path"; }                  // regex then holds the path's name
  bool missed() const { return type == "expect" || type == "mismatch"; }  // read from the case's failures
  static Failure mismatch(const std::string& output, double rtol, double atol) {
    return {"mismatch",
            fmt::format("^values '{}'[\\[:]", output),
            {{"values", {{"vs", "cpu"}, {"rtol", rtol}, {"atol", atol}}}},
            output};
  }
};

// A candidate: the program, and the transform it runs under.
struct Candidate {
  Jaxpr jaxpr;
  std::string transform;
};

std::string masked(const std::string& m) {  // a regex of the message, numbers free
  std::string r = "^";
  for (char c : m) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (r.size() < 6 || r.substr(r.size() - 6) != "[0-9]+") r += "[0-9]+";
    } else if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) {
      r += std::string("\\") + c;
    } else {
      r += c;
    }
  }
  return r + "$";
}

class Reducer {
 public:
  Reducer(const Scenario& base, std::string profile, std::vector<text::Tensor> consts, Failure f, double seconds)
      : base_(base),
        profile_(std::move(profile)),
        consts_(std::move(consts)),
        failure_(std::move(f)),
        deadline_(Clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000))) {
    work_ = fs::temp_directory_path() / fmt::format("jxlab-reduce-{}", getpid());
    fs::create_directories(work_ / "programs");
  }
  ~Reducer() {  // JX_REDUCE_KEEP=1 keeps the scratch folder (the last candidate) for a look
    std::error_code ec;
    if (const char* k = std::getenv("JX_REDUCE_KEEP"); !(k && std::string(k) == "1")) fs::remove_all(work_, ec);
  }
  bool out_of_time() const { return Clock::now() > deadline_; }
  // JS clients dispose their handles (`using`): a disposal failure needs the program run so
  void dispose_intermediates() { inputs_["dispose_intermediates"] = true; }
  bool disposes() const { return inputs_.contains("dispose_intermediates"); }
  int runs() const { return runs_; }

  // Writes the candidate as a program case and a one-case scenario under `dir`.
  // A candidate's scenario (final false) checks what the failure needs; the final one asserts it.
  void write(const Candidate& c, const fs::path& dir, const std::string& id, bool with_current,
             bool final = true) const {
    fs::create_directories(dir / "programs");
    json prog = {{"name", id}, {"jaxpr", c.jaxpr.str()}};
    if (!consts_.empty()) {
      prog["consts"] = json::array();
      for (const auto& t : consts_) prog["consts"].push_back(json::parse(text::tensor_json(t)));
    }
    std::ofstream(dir / "programs" / (id + ".json")) << prog.dump(1) << "\n";
    json keep = failure_.missed()      ? failure_.expect  // an "expect" scenario fails as the case did, until fixed
                : failure_.scan_path() ? json{{"scan_paths", json::array({failure_.regex})}}
                                       : json{{"error", {{"type", failure_.type}, {"message", failure_.regex}}}};
    // the reduced scenario asserts the wrong answer (it passes while the bug reproduces)
    if (failure_.type == "mismatch" && final) keep["values"]["differ"] = json::array({failure_.output});
    json cases = json::array({{{"profile", profile_}, {"expect", keep}}});
    if (with_current) cases.push_back({{"profile", "current"}, {"expect", {{"leaked_slots", 0}}}});
    json s = {{"id", id},
              {"title", fmt::format("{} (reduced)", base_.title)},
              {"source", fmt::format("jxlab reduce {}", base_.id)},
              {"description",
               fmt::format("Reduced by jxlab reduce from scenario {} ({}): the smallest program found that still fails "
                           "under {} on {} the same way.",
                           base_.id, base_.file, profile_, base_.backends.at(0))},
              {"workload", {{"program", "programs/" + id + ".json"}, {"inputs", inputs_}}},
              {"transform", c.transform},
              {"backends", base_.backends},
              {"limits", base_.limits},
              {"cases", cases}};
    std::ofstream(dir / (id + ".json")) << s.dump(2) << "\n";
  }

  // Runs the candidate in a child jxlab; true when it fails as the case does.
  // (the baseline check runs without the time bound: a bound too short to run the case once
  // must not make the case look as if it did not fail)
  bool keeps_failure(const Candidate& c, bool bounded = true) {
    if (failure_.missed()) {
      const json res = result(c, bounded);
      for (const json& f : res.value("failures", json::array()))
        if (std::regex_search(f.get<std::string>(), std::regex(failure_.regex))) return true;
      return false;
    }
    for (const json& p : points(c, bounded)) {
      if (failure_.scan_path() && !p.contains("error"))
        for (const json& sp : p["scan_paths"])
          if (failure_.matches("scan_path", sp.get<std::string>())) return true;
      if (p.contains("error") &&
          failure_.matches(p["error"]["type"].get<std::string>(), p["error"]["message"].get<std::string>()))
        return true;
    }
    return false;
  }
  void set_failure(Failure f) { failure_ = std::move(f); }

  // The measured points of the candidate's run ([] when it crashed or ran out of time).
  json points(const Candidate& c, bool bounded) {
    const json r = result(c, bounded);
    return r.contains("measured") && r["measured"].contains("points") ? r["measured"]["points"] : json::array();
  }

  // The candidate's case result from its report ({} when it crashed or ran out of time).
  json result(const Candidate& c, bool bounded) {
    ++runs_;
    fs::remove_all(work_ / "r");
    write(c, work_, "cand", false, false);
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    const pid_t pid = fork();
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 1), dup2(devnull, 2);
      // (in process: this child is the candidate's isolation already)
      execl(exe.c_str(), exe.c_str(), "run", "cand", "--scenarios", work_.c_str(), "--report", (work_ / "r").c_str(),
            "--in-process", nullptr);
      _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (bounded && out_of_time()) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return json::object();
      }
      usleep(20000);
    }
    std::ifstream in(work_ / "r" / "report.json");
    if (!in) return json::object();  // crashed before its report: a rejected candidate
    const json r = json::parse(in, nullptr, false);
    if (r.is_discarded() || !r.contains("results") || r["results"].empty()) return json::object();
    return r["results"][0];
  }

 private:
  const Scenario& base_;
  std::string profile_;
  std::vector<text::Tensor> consts_;
  Failure failure_;
  Clock::time_point deadline_;
  fs::path work_;
  int runs_ = 0;
  json inputs_ = {{"seed", 0}};
};

// The case to reduce: the scenario, its program (exported when compiled in) and the failure.
struct Start {
  Scenario scenario;
  text::CaseFile program;
  std::string profile;
  Failure failure;
};

// A program case file (.jaxpr, or .json with a "jaxpr"): a one-case scenario around it, on
// --backend (cpu), under --profile (current) and --transform (eager); the failure is observed.
bool is_program_file(const std::string& path) {
  if (!fs::exists(path)) return false;
  if (fs::path(path).extension() == ".jaxpr") return true;
  std::ifstream in(path);
  const json j = json::parse(in, nullptr, false);
  return j.is_object() && j.contains("jaxpr");
}

Start program_start(const ReduceArgs& a) {
  Start st;
  Scenario& s = st.scenario;
  s.id = fs::path(a.target).stem().string();  // as a scenario id: lowercase, digits, dashes
  for (char& ch : s.id)
    ch = std::isalnum(static_cast<unsigned char>(ch)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch)))
                                                      : '-';
  s.title = s.id;
  s.source = a.target;
  s.file = fs::absolute(a.target).string();
  s.program = s.file;
  s.workload = "program:" + s.id;
  // a case file may name its own (a differential fuzz finding: "reduce": {"backend", "transform"})
  std::ifstream in(a.target);
  const json raw = fs::path(a.target).extension() == ".json" ? json::parse(in, nullptr, false) : json();
  const json dflt =
      raw.is_object() && raw.contains("reduce") && raw["reduce"].is_object() ? raw["reduce"] : json::object();
  s.backends = {!a.backend.empty() ? a.backend : dflt.value("backend", std::string("cpu"))};
  s.transform = !a.transform.empty() ? a.transform : dflt.value("transform", std::string("eager"));
  st.profile = a.profile.empty() ? "current" : a.profile;
  s.cases = {Case{st.profile, Expect{}, {}}};
  st.program = text::read_case_file(a.target);
  return st;
}

Start start_of(const ReduceArgs& a) {
  if (is_program_file(a.target)) return program_start(a);
  Start st;
  if (fs::exists(a.target) && fs::path(a.target).extension() == ".json")
    st.scenario = load_scenario(a.target);
  else {
    const auto all = load_scenarios(a.scenarios);
    auto it = std::find_if(all.begin(), all.end(), [&](const Scenario& s) { return s.id == a.target; });
    if (it == all.end())
      throw UsageError(
          fmt::format("jxlab reduce: '{}' is neither a scenario id in {} nor a scenario file", a.target, a.scenarios));
    st.scenario = *it;
  }
  Scenario& s = st.scenario;
  if (!a.backend.empty()) s.backends = {a.backend};
  s.backends.resize(1);
  if (!a.transform.empty()) s.transform = a.transform;
  const Case* chosen = nullptr;
  // the failure: an expected error, or the scan path of a replay half that expects one; with
  // --profile naming another case, the expectations that case misses now (kind "expect")
  auto failing = [](const Case& c) {
    return c.expect.error.has_value() || (c.profile != "current" && c.expect.scan_paths.size() == 1);
  };
  std::size_t index = 0;
  for (std::size_t i = 0; i < s.cases.size(); ++i)
    if ((a.profile.empty() ? failing(s.cases[i]) : s.cases[i].profile == a.profile) && !chosen)
      chosen = &s.cases[i], index = i;
  if (!chosen)
    throw UsageError(fmt::format("jxlab reduce: scenario {} has no case {}that expects an error or a single scan path",
                                 s.id, a.profile.empty() ? "" : "under " + a.profile + " "));
  st.profile = chosen->profile;
  if (chosen->expect.error)
    st.failure = {chosen->expect.error->type,
                  chosen->expect.error->message.empty() ? ".*" : chosen->expect.error->message,
                  {},
                  ""};
  else if (failing(*chosen))
    st.failure = {"scan_path", chosen->expect.scan_paths[0], {}, ""};
  else {  // the case's own expectations from its file, values and memory left out (the program changes)
    std::ifstream in(s.file);
    json raw = json::parse(in, nullptr, false);
    json x = raw.is_discarded() ? json::object() : raw["cases"][index]["expect"];
    // values against the file change with the program; against the cpu oracle they stay a check
    if (!(x.contains("values") && x["values"].value("vs", std::string("file")) == "cpu")) x.erase("values");
    x.erase("memory");
    st.failure = {"expect", "", x, ""};  // the message is what the case misses now (observe_failure)
  }
  if (s.program.empty()) {
    json params = s.params;
    if (!s.sweep_key.empty()) params[s.sweep_key] = s.sweep_values.front();
    const json c = export_workload(s.workload, params, s.id);
    const fs::path tmp = fs::temp_directory_path() / fmt::format("jxlab-reduce-start-{}.json", getpid());
    std::ofstream(tmp) << c.dump();
    st.program = text::read_case_file(tmp);
    fs::remove(tmp);
  } else {
    st.program = text::read_case_file(s.program);
    json values = st.program.params;
    for (auto it = s.params.begin(); it != s.params.end(); ++it) values[it.key()] = it.value();
    if (!s.sweep_key.empty()) values[s.sweep_key] = s.sweep_values.front();
    st.program.jaxpr = text::substitute(st.program.jaxpr_template, values);
  }
  return st;
}

// The greedy search: each move tries candidates and keeps one that still fails; a move taken is
// recorded for the summary.
class Search {
 public:
  Search(Reducer& r, Candidate start, Failure f) : r_(r), best_(std::move(start)), failure_(std::move(f)) {}
  const Candidate& best() const { return best_; }
  const std::vector<std::string>& moves() const { return moves_; }

  // One round of every move; true when one was taken.
  bool round() {
    bool changed = drop_transform();
    changed = delete_eqns() || changed;
    changed = bypass_eqns() || changed;
    changed = inputs_as_constants() || changed;
    changed = cut_bodies() || changed;
    changed = shrink_dims() || changed;
    changed = simplify_literals() || changed;
    changed = drop_unused_inputs() || changed;
    return keep_one_output() || changed;
  }

 private:
  bool take(Candidate c, std::string what) {
    if (r_.out_of_time() || !r_.keeps_failure(c)) return false;
    moves_.push_back(std::move(what));
    best_ = std::move(c);
    return true;
  }
  bool drop_transform() {  // the simplest transform that still fails
    for (const char* t : {"eager", "jit", "value_and_grad"}) {
      if (best_.transform == t) return false;
      if (take({best_.jaxpr, t}, fmt::format("transform {} -> {}", best_.transform, t))) return true;
    }
    return false;
  }
  bool delete_eqns() {
    bool changed = false;
    for (std::size_t i = best_.jaxpr.eqns.size(); i-- > 0 && !r_.out_of_time();) {
      if (i >= best_.jaxpr.eqns.size()) continue;
      // an equation of literals only is a constant (what "input as a constant" makes): deleting
      // it would turn it back into an input, and the two moves would undo each other forever
      const auto& in = best_.jaxpr.eqns[i].in;
      if (std::all_of(in.begin(), in.end(), [](const jx::Atom& a) { return a.is_literal(); })) continue;
      Candidate c{without_eqn(best_.jaxpr, i), best_.transform};
      if (c.jaxpr.eqns.size() == best_.jaxpr.eqns.size()) continue;
      const std::string what = fmt::format("delete {} ({} -> {} equations)", prim_name(best_.jaxpr.eqns[i].prim),
                                           best_.jaxpr.eqns.size(), c.jaxpr.eqns.size());
      changed = take(std::move(c), what) || changed;
    }
    return changed;
  }
  bool bypass_eqns() {  // an equation replaced by one of its operands
    bool changed = false;
    for (std::size_t i = best_.jaxpr.eqns.size(); i-- > 0 && !r_.out_of_time();)
      for (std::size_t k = 0; i < best_.jaxpr.eqns.size() && k < best_.jaxpr.eqns[i].in.size(); ++k)
        if (auto j = bypassed(best_.jaxpr, i, k))
          if (take({*j, best_.transform},
                   fmt::format("bypass {} (operand {})", prim_name(best_.jaxpr.eqns[i].prim), k))) {
            changed = true;
            break;
          }
    return changed;
  }
  bool inputs_as_constants() {
    bool changed = false;
    for (std::size_t k = best_.jaxpr.invars.size(); k-- > 0 && !r_.out_of_time();)
      if (k < best_.jaxpr.invars.size() && best_.jaxpr.invars.size() >= 2)
        changed =
            take({input_as_constant(best_.jaxpr, k), best_.transform}, fmt::format("input {} as a constant", k)) ||
            changed;
    return changed;
  }
  bool cut_bodies() {  // equations inside scan/while/cond bodies, last first
    bool changed = false;
    for (std::size_t e = 0; e < best_.jaxpr.eqns.size() && !r_.out_of_time(); ++e) {
      Jaxpr probe = best_.jaxpr;
      const std::size_t nb = bodies(probe.eqns[e]).size();
      for (std::size_t w = 0; w < nb && !r_.out_of_time(); ++w)
        for (std::size_t k = static_cast<const JaxprBody&>(**bodies(probe.eqns[e])[w]).jaxpr.eqns.size();
             k-- > 0 && !r_.out_of_time();) {
          auto j = body_cut(best_.jaxpr, e, w, k);
          if (!j || count_all(*j) >= count_all(best_.jaxpr) + 1) continue;
          if (take({*j, best_.transform},
                   fmt::format("cut equation {} of {}'s body {}", k, prim_name(best_.jaxpr.eqns[e].prim), w)))
            changed = true, probe = best_.jaxpr;
        }
    }
    return changed;
  }
  bool shrink_dims() {  // a dimension shrunk everywhere: to 1, 2, or half (then sizes are listed anew)
    for (std::int64_t n : sizes_of(best_.jaxpr))
      for (std::int64_t m : {std::int64_t{1}, std::int64_t{2}, n / 2}) {
        if (m >= n || m < 1) continue;
        auto j = resized(best_.jaxpr, n, m);
        if (j && take({*j, best_.transform}, fmt::format("dimension {} -> {}", n, m))) return true;
      }
    return false;
  }
  bool simplify_literals() {  // literals to 1 or 0
    bool changed = false;
    for (std::size_t e = 0; e < best_.jaxpr.eqns.size() && !r_.out_of_time(); ++e)
      for (std::size_t k = 0; k < best_.jaxpr.eqns[e].in.size() && !r_.out_of_time(); ++k) {
        const jx::Atom a = best_.jaxpr.eqns[e].in[k];
        if (!a.is_literal() || a.value == 0 || a.value == 1) continue;
        for (double v : {1.0, 0.0}) {
          Candidate c = best_;
          c.jaxpr.eqns[e].in[k].value = v;
          if (take(std::move(c),
                   fmt::format("literal {} of {} -> {}", literal_str(a), prim_name(best_.jaxpr.eqns[e].prim), v))) {
            changed = true;
            break;
          }
        }
      }
    return changed;
  }
  bool drop_unused_inputs() {
    Candidate c = best_;
    std::vector<int> kept;
    for (int v : c.jaxpr.invars)
      if (used_after(c.jaxpr, v, 0)) kept.push_back(v);
    if (kept.size() == c.jaxpr.invars.size()) return false;
    c.jaxpr.invars = kept;
    return take(std::move(c), fmt::format("drop {} unused inputs", best_.jaxpr.invars.size() - kept.size()));
  }
  // A single output; for a mismatch on outK only K, which is then out0.
  bool keep_one_output() {
    std::smatch m;
    const bool numbered =
        failure_.type == "mismatch" && std::regex_match(failure_.output, m, std::regex("out([0-9]+)"));
    for (std::size_t o = 0; best_.jaxpr.outs.size() > 1 && o < best_.jaxpr.outs.size(); ++o) {
      if (numbered && std::to_string(o) != m[1].str()) continue;
      Failure f = failure_;
      if (numbered) f = Failure::mismatch("out0", f.expect["values"]["rtol"], f.expect["values"]["atol"]);
      r_.set_failure(f);
      Candidate c = best_;
      c.jaxpr.outs = {best_.jaxpr.outs[o]};
      drop_dead(c.jaxpr);
      if (take(std::move(c), fmt::format("keep output {} of {}", o, best_.jaxpr.outs.size()))) {
        failure_ = f;
        return true;
      }
      r_.set_failure(failure_);
    }
    return false;
  }

  Reducer& r_;
  Candidate best_;
  Failure failure_;
  std::vector<std::string> moves_;
};

// Default tolerances of a mismatch: float32 outputs 1e-3 relative (1e-4 absolute), float64 1e-8
// (1e-10): far above the backends' rounding differences, far below a wrong answer.
std::pair<double, double> tolerances(const Jaxpr& j, const ReduceArgs& a) {
  bool f32 = false;
  for (const jx::Atom& o : j.outs) f32 = f32 || j.aval_of(o).dtype == DType::float32;
  return {a.rtol.value_or(f32 ? 1e-3 : 1e-8), a.atol.value_or(f32 ? 1e-4 : 1e-10)};
}

// The output a "values 'NAME'..." failure names, or "".
std::string values_output(const std::string& failure) {
  std::smatch m;
  return std::regex_search(failure, m, std::regex("^values '([^']+)'")) ? m[1].str() : "";
}

// The failure a case without an error regex keeps: for a missed expectation, the first one the
// case misses now (a values check against the cpu oracle becomes a mismatch on that output); for
// a program file, its error, else the first output beyond tolerance of the cpu oracle.
void observe_failure(Start& st, Reducer& r, const Candidate& best, const ReduceArgs& a) {
  const Scenario& s = st.scenario;
  if (st.failure.type == "expect") {
    const json res = r.result(best, false);
    if (res.value("failures", json::array()).empty())
      throw UsageError(fmt::format(
          "jxlab reduce: the case {} of {} meets its expectations (values aside): nothing to keep", st.profile, s.id));
    const std::string first = res["failures"][0].get<std::string>(), out = values_output(first);
    if (!out.empty() && st.failure.expect.contains("values")) {
      const json& v = st.failure.expect["values"];
      st.failure = Failure::mismatch(out, v.value("rtol", 1e-9), v.value("atol", 0.0));
    } else {
      st.failure.regex = masked(first);
    }
  } else if (st.failure.type.empty()) {  // a program case file: the failure is what it does now
    for (const json& pt : r.points(best, false))
      if (pt.contains("error") && st.failure.type.empty())
        st.failure = {
            pt["error"]["type"].get<std::string>(), masked(pt["error"]["message"].get<std::string>()), {}, ""};
    if (st.failure.type.empty()) {
      const auto [rtol, atol] = tolerances(best.jaxpr, a);
      r.set_failure(Failure::mismatch(".*", rtol, atol));
      for (const json& f : r.result(best, false).value("failures", json::array()))
        if (const std::string out = values_output(f.get<std::string>()); !out.empty() && st.failure.type.empty())
          st.failure = Failure::mismatch(out, rtol, atol);
    }
    if (st.failure.type.empty())
      throw UsageError(fmt::format(
          "jxlab reduce: {} runs without an error on {} under {} ({}) and agrees with the cpu oracle: nothing to keep",
          a.target, s.backends[0], st.profile, s.transform));
  } else {
    return;
  }
  r.set_failure(st.failure);
  fmt::print("keeping {}: /{}/\n",
             st.failure.type == "mismatch" ? "a mismatch against the cpu oracle" : st.failure.type, st.failure.regex);
}

}  // namespace

int cmd_reduce(const ReduceArgs& a) {
  if (a.out.empty()) throw UsageError("jxlab reduce: --out DIR is required");
  Start st = start_of(a);
  const Scenario& s = st.scenario;
  const text::Program p = text::load_program(st.program.jaxpr, s.id);
  Reducer r(s, st.profile, st.program.consts, st.failure, a.max_seconds);
  const Candidate start{p.jaxpr, s.transform};
  observe_failure(st, r, start, a);
  const auto t0 = Clock::now();
  if (!r.keeps_failure(start, false) && !(r.dispose_intermediates(), r.keeps_failure(start, false)))
    throw Error(
        fmt::format("jxlab reduce: the program of {} does not fail with {} /{}/ under {} on {} (as a program, with "
                    "generated inputs)",
                    s.id, st.failure.type, st.failure.regex, st.profile, s.backends[0]));
  Search search(r, start, st.failure);
  while (!r.out_of_time() && search.round()) {}
  const Candidate& best = search.best();
  const std::string id = s.id + "-reduced";
  bool with_current = false;
  for (const Case& c : s.cases) with_current = with_current || (c.profile == "current" && st.profile != "current");
  r.write(best, a.out, id, with_current);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("{}: equations {} -> {} ({} -> {} with constants and bodies) in {} runs, {:.1f} s{}\n", s.id,
             count_eqns(start.jaxpr), count_eqns(best.jaxpr), count_all(start.jaxpr), count_all(best.jaxpr), r.runs(),
             secs, r.out_of_time() ? " (stopped at --max-seconds)" : "");
  if (r.disposes())
    fmt::print("  (run with dispose_intermediates: the failure needs the handles disposed, as the client did)\n");
  for (const auto& m : search.moves()) fmt::print("  {}\n", m);
  fmt::print("wrote {} and {}; check it with: jxlab run {} --scenarios {}\n",
             (fs::path(a.out) / (id + ".json")).string(), (fs::path(a.out) / "programs" / (id + ".json")).string(), id,
             a.out);
  return 0;
}

}  // namespace jx::lab
