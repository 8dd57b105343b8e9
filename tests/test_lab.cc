// The lab: scenario validation (file, JSON pointer, reason), the runner's expectations, replay
// profiles, reports, and the CLI's skip of an unavailable backend.
#include <expat.h>
#include <filesystem>
#include <fstream>

#include "reports/report.h"
#include "scenarios/runner.h"
#include "reports/soak.h"
#include "tests/helpers.h"
#include "workloads/dlm/dlm_io.h"

using namespace jx;
using namespace jx::lab;
namespace fs = std::filesystem;

namespace {

// The jxlab binary: JXLAB from the environment, the one built beside this test, or (a packed
// copy, as on the GPU machine) one in this executable's folder or its parent.
std::string jxlab_path() {
  if (const char* e = std::getenv("JXLAB"); e && *e) return e;
  if (fs::exists(JXLAB_PATH)) return JXLAB_PATH;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& p : {self / "jxlab", self.parent_path() / "jxlab"})
    if (fs::exists(p)) return p.string();
  return JXLAB_PATH;  // the error names the path looked for
}

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / fmt::format("jxlab-test-{}-{}", getpid(), counter()++)) {
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

const char* kConcat = R"({
  "id": "ID",
  "title": "t", "source": "s",
  "workload": {"name": "concat_grad", "params": {"theta": 2.0, "dtype": "float64"}},
  "transform": "value_and_grad",
  "backends": ["cpu"],
  "cases": [
    {"profile": "strict-concat-transpose", "expect": {"error": {"type": "NonlinearError", "message": "backward pass for concatenate", "values_before": true}}},
    {"profile": "current", "expect": {"values": {"expected": {"value": [74.0], "grad": [GRAD]}}, "leaked_slots": 0}}
  ]
})";

std::string concat(const std::string& id, const std::string& grad) {
  std::string s = kConcat;
  s.replace(s.find("ID"), 2, id);
  s.replace(s.find("GRAD"), 4, grad);
  return s;
}

::testing::AssertionResult load_fails(const std::string& file, const std::string& fragment) {
  try {
    (void)load_scenario(file);
  } catch (const ScenarioError& e) {
    const std::string m = e.what();
    if (m.rfind(file, 0) == 0 && m.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message: " << m;
  }
  return ::testing::AssertionFailure() << "loaded without error";
}

}  // namespace

TEST(Lab, MalformedScenariosNameFilePointerAndReason) {
  TempDir d;
  EXPECT_TRUE(load_fails(d.write("bad-json.json", "{\"id\": "), ": /: not valid JSON"));
  EXPECT_TRUE(load_fails(d.write("no-id.json", R"({"title": "t"})"), ": /: missing required field 'id'"));
  std::string s = concat("unknown-workload", "20.0");
  s.replace(s.find("concat_grad"), 11, "no_such_thing");
  EXPECT_TRUE(
      load_fails(d.write("unknown-workload.json", s), ": /workload/name: unknown workload 'no_such_thing' (known: "));
  s = concat("unknown-profile", "20.0");
  s.replace(s.find("strict-concat-transpose"), 23, "v0.0.0");
  EXPECT_TRUE(load_fails(d.write("unknown-profile.json", s), ": /cases/0/profile: replay: unknown profile 'v0.0.0'"));
  // the error message's regex: refused with the reason (the last two overflow libstdc++'s regex
  // compiler: refused before it runs, a fuzz finding)
  auto regex_refused = [&](const std::string& id, const std::string& regex, const std::string& why) {
    std::string t = concat(id, "20.0");
    t.replace(t.find("backward pass for concatenate"), 29, regex);
    return load_fails(d.write(id + ".json", t), ": /cases/0/expect/error/message: " + why);
  };
  EXPECT_TRUE(regex_refused("bad-regex", "([", "not a valid regular expression"));
  EXPECT_TRUE(regex_refused("big-repeat", "a{5555555554555555555}", "a repetition count over 1000"));
  EXPECT_TRUE(regex_refused("big-backref", "(a)\\\\5555555554555555555", "a back-reference number over 999"));
  s = concat("bad-number", "\"x\"");
  EXPECT_TRUE(load_fails(d.write("bad-number.json", s), ": /cases/1/expect/values/expected/grad/0: expected a number"));
  s = concat("unknown-field", "20.0");
  s.replace(s.find("\"leaked_slots\""), 14, "\"leaked_slot\"");
  EXPECT_TRUE(
      load_fails(d.write("unknown-field.json", s), ": /cases/1/expect/leaked_slot: unknown field 'leaked_slot'"));
  EXPECT_TRUE(
      load_fails(d.write("other-name.json", concat("the-id", "20.0")), ": /id: 'the-id' must equal the file name"));
  s = concat("growth", "20.0");
  s.replace(s.find("\"leaked_slots\": 0"), 17, "\"dispatches\": {\"growth\": \"linear\"}");
  EXPECT_TRUE(load_fails(d.write("growth.json", s),
                         ": /cases/1/expect/dispatches/growth: a growth expectation needs a workload sweep"));
  s = concat("backend", "20.0");
  s.replace(s.find("[\"cpu\"]"), 7, "[\"tpu\"]");
  EXPECT_TRUE(load_fails(d.write("backend.json", s), ": /backends/0: \"tpu\" is not one of cpu, native, vulkan"));
  EXPECT_THROW(load_scenarios((d.path / "missing").string()), ScenarioError);
}

// A scenario as JSON, written as <id>.json (the id is the file's stem).
std::string write_scenario(const TempDir& d, nlohmann::json j, const std::string& id) {
  j["id"] = id;
  return d.write(id + ".json", j.dump());
}

TEST(Lab, ParametersAndTransformsAWorkloadWouldIgnoreAreRefused) {
  TempDir d;
  const auto base = nlohmann::json::parse(concat("x", "20.0"));
  auto j = base;
  j["workload"]["params"] = {{"thetta", 9}, {"dtype", "float64"}};
  EXPECT_TRUE(
      load_fails(write_scenario(d, j, "typo"),
                 ": /workload/params/thetta: workload concat_grad has no parameter 'thetta' (known: theta, dtype)"));
  j = base;
  j["workload"]["params"]["N"] = 5000;
  EXPECT_TRUE(
      load_fails(write_scenario(d, j, "big-n"), ": /workload/params/N: workload concat_grad has no parameter 'N'"));
  j = base;
  j["workload"] = {{"name", "isnan41"}, {"params", {{"dtype", "float32"}}}};
  EXPECT_TRUE(load_fails(write_scenario(d, j, "isnan-grad"),
                         ": /transform: workload isnan41 runs under eager or jit only, not value_and_grad"));
  j = base;
  j["workload"] = {{"name", "scan_dispatch"}, {"params", {{"case", "B"}}}};
  j["transform"] = "eager";
  EXPECT_TRUE(load_fails(write_scenario(d, j, "sd"),
                         ": /transform: workload scan_dispatch: case B runs under transform jit, not eager"));
}

TEST(Lab, ProgramWorkloadsRunJaxprFilesWithTheirPlaceholders) {
  TempDir d;
  fs::create_directories(d.path / "programs");  // beside the scenarios, every *.json is a scenario
  d.write("programs/cumsum.json",
          R"({"jaxpr": "{ lambda ; a:f32[{n}]. let b:f32[{n}] = cumsum[axis=0 reverse=False] a in (b,) }",
    "params": {"n": 4}, "inputs": [{"dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]}],
    "outputs": [{"dtype": "float32", "shape": [4], "data": [1, 3, 6, 10]}]})");
  const auto base = nlohmann::json::parse(
      R"({"title": "t", "source": "s", "workload": {"program": "programs/cumsum.json"}, "transform": "jit",
    "backends": ["cpu"], "cases": [{"profile": "current", "expect": {"values": {"expected": {"out0": [1, 3, 6, 10]}}, "leaked_slots": 0}}]})");
  // the file's own inputs (its size, n = 4): the values it records
  const Scenario s = load_scenario(write_scenario(d, base, "prog"));
  EXPECT_EQ(s.workload, "program:cumsum");
  const std::string run =
      fmt::format("{} run prog --scenarios {} > {}/out 2>&1", jxlab_path(), d.path.string(), d.path.string());
  EXPECT_EQ(std::system(run.c_str()), 0);
  // value_and_grad: the sum of the outputs, d/da_i = n - i
  auto j = base;
  j["transform"] = "value_and_grad";
  j["cases"][0]["expect"]["values"]["expected"] = {{"value", {20}}, {"grad", {4, 3, 2, 1}}};
  write_scenario(d, j, "prog");
  EXPECT_EQ(std::system(run.c_str()), 0);
  // a sweep resizes the program: generated inputs, one case per size
  j = base;
  j["workload"]["sweep"] = {{"n", {3, 5}}};
  j["cases"][0]["expect"] = {{"leaked_slots", 0}, {"values", {{"vs", "cpu"}}}};
  write_scenario(d, j, "prog");
  EXPECT_EQ(std::system(run.c_str()), 0);
  // a parameter without a placeholder, a placeholder without a value, a program that does not load
  j = base;
  j["workload"]["params"] = {{"m", 3}};
  EXPECT_TRUE(load_fails(write_scenario(d, j, "prog-bad"), ": /workload/params/m: the program has no placeholder {m}"));
  d.write("programs/holes.json", R"({"jaxpr": "{ lambda ; a:f32[{k}]. let  in (a,) }"})");
  j = base;
  j["workload"]["program"] = "programs/holes.json";
  EXPECT_TRUE(
      load_fails(write_scenario(d, j, "holes-bad"), ": /workload/params: the program's placeholder {k} has no value"));
  j["workload"]["program"] = "programs/nothing.json";
  EXPECT_TRUE(load_fails(write_scenario(d, j, "missing-prog"), ": /workload/program: "));
  d.write("programs/broken.json", R"({"jaxpr": "{ lambda ; a:f32[3]. let b:f32[3] = frob a in (b,) }"})");
  j["workload"]["program"] = "programs/broken.json";
  EXPECT_TRUE(load_fails(write_scenario(d, j, "broken-prog"), ": /workload/program: "));
}

TEST(Lab, BothHalvesOfAScenarioAreAsserted) {
  TempDir d;
  auto ok = run_scenario(load_scenario(d.write("concat-ok.json", concat("concat-ok", "20.0"))), {});
  ASSERT_EQ(ok.size(), 2u);
  for (const auto& r : ok) EXPECT_EQ(r.status, "pass") << r.name() << ": " << (r.failures.empty() ? "" : r.failures[0]);
  EXPECT_EQ(ok[0].measured["points"][0]["error"]["type"], "NonlinearError");
  // a wrong expected gradient fails the current case with the figures; the replay case still passes
  auto bad = run_scenario(load_scenario(d.write("concat-bad.json", concat("concat-bad", "21.0"))), {});
  EXPECT_EQ(bad[0].status, "pass");
  ASSERT_EQ(bad[1].status, "fail");
  EXPECT_NE(bad[1].failures[0].find("values 'grad'[0] = 20, expected 21"), std::string::npos) << bad[1].failures[0];
  // a replay case whose failure does not happen is a failure too
  std::string s = concat("concat-replay", "20.0");
  s.replace(s.find("strict-concat-transpose"), 23, "borrowed-residuals");
  auto r =
      run_scenario(load_scenario(d.write("concat-replay.json", s)), {.backend = "", .profile = "borrowed-residuals"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "fail");
  EXPECT_NE(r[0].failures[0].find("but the workload succeeded"), std::string::npos) << r[0].failures[0];
}

// values.differ: a documented wrong answer is asserted (the case passes while it reproduces,
// fails once the values agree); every other output must still agree; a bad list is refused.
TEST(Lab, ValuesDifferAssertsADocumentedWrongAnswer) {
  TempDir d;
  auto with_differ = [&](const std::string& id, const std::string& grad, const std::string& differ) {
    std::string s = concat(id, grad);
    const std::string at = "\"values\": {";
    s.replace(s.find(at), at.size(), at + "\"differ\": " + differ + ", ");
    return d.write(id + ".json", s);
  };
  // the file says grad 21, the workload gives 20: a wrong answer, asserted
  auto wrong = run_scenario(load_scenario(with_differ("differ-wrong", "21.0", "[\"grad\"]")),
                            {.backend = "", .profile = "current"});
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0].status, "pass") << (wrong[0].failures.empty() ? "" : wrong[0].failures[0]);
  // the right answer: the documented difference is gone, so the case fails and says so
  auto right = run_scenario(load_scenario(with_differ("differ-right", "20.0", "[\"grad\"]")),
                            {.backend = "", .profile = "current"});
  ASSERT_EQ(right.size(), 1u);
  ASSERT_EQ(right[0].status, "fail");
  EXPECT_NE(right[0].failures[0].find("values 'grad' agree with the file within rtol"), std::string::npos)
      << right[0].failures[0];
  // an output the reference does not have
  auto none = run_scenario(load_scenario(with_differ("differ-none", "21.0", "[\"nope\"]")),
                           {.backend = "", .profile = "current"});
  ASSERT_EQ(none[0].status, "fail");
  EXPECT_NE(none[0].failures[0].find("values 'nope': no such output in the reference"), std::string::npos)
      << none[0].failures[0];
  EXPECT_TRUE(load_fails(with_differ("differ-empty", "20.0", "[]"),
                         "/values/differ: expected a non-empty array of output names"));
  EXPECT_TRUE(
      load_fails(with_differ("differ-number", "20.0", "[3]"), "/values/differ/0: expected an output name, got 3"));
}

TEST(Lab, ReplayPoliciesAreOffByDefaultAndScoped) {
  EXPECT_EQ(replay::policy(), replay::Policy{});
  EXPECT_EQ(replay::profile("current").policy, replay::Policy{});
  EXPECT_EQ(replay::policy().key(), "");
  {
    replay::Scope s(replay::profile("strict-concat-transpose").policy);
    EXPECT_TRUE(replay::policy().strict_concat_transpose);
    EXPECT_EQ(replay::policy().key(), "strict_concat_transpose");
  }
  EXPECT_EQ(replay::policy(), replay::Policy{});
  EXPECT_TRUE(jxt::throws_with<Error>([] { (void)replay::with_switch({}, "fast_math", true); },
                                      {"unknown switch 'fast_math'"}));
  for (const auto& p : replay::profiles())
    if (p.name != "current" && !p.historical) EXPECT_EQ(p.policy.switches().size(), 1u) << p.name;
}

// The buffer-limit document's releases as switch sets: budget ignored until v0.7.4, the
// concatenate error only in v0.7.2, borrowed residuals from v0.7.3 on (and v0.7.1).
TEST(Lab, HistoricalProfilesModelTheDocumentedReleases) {
  auto on = [](const std::string& name) { return replay::profile(name).policy.key(); };
  EXPECT_EQ(on("v0.7.1"), "ignore_buffer_budget+borrowed_residuals");
  EXPECT_EQ(on("v0.7.2"), "ignore_buffer_budget+strict_concat_transpose");
  EXPECT_EQ(on("v0.7.3"), "ignore_buffer_budget+borrowed_residuals");
  EXPECT_EQ(on("v0.7.4"), "borrowed_residuals");
  for (const char* n : {"v0.7.1", "v0.7.2", "v0.7.3", "v0.7.4"}) EXPECT_TRUE(replay::profile(n).historical) << n;
  EXPECT_FALSE(replay::profile("current").historical);
  // the schema's profile enum lists every profile
  std::ifstream f(jxt::source_dir() + "/scenarios/scenario.schema.json");
  const auto schema = nlohmann::json::parse(f);
  const auto& e = schema["properties"]["cases"]["items"]["properties"]["profile"]["enum"];
  std::vector<std::string> listed(e.begin(), e.end()), known;
  for (const auto& p : replay::profiles()) known.push_back(p.name);
  EXPECT_EQ(listed, known);
}

TEST(Lab, HistoryRowsAreValidated) {
  TempDir d;
  auto with_history = [&](const std::string& id, const std::string& history) {
    std::string s = concat(id, "20.0");
    s.insert(s.rfind('}'), ", \"history\": " + history);
    return d.write(id + ".json", s);
  };
  auto ok = load_scenario(
      with_history("hist-ok", R"([{"profile": "v0.7.2", "documented": {"value_and_grad": "Nonlinear"}}])"));
  ASSERT_EQ(ok.history.size(), 1u);
  EXPECT_EQ(ok.history[0].profile, "v0.7.2");
  EXPECT_EQ(ok.history[0].documented.at(0).second, "Nonlinear");
  EXPECT_TRUE(load_fails(with_history("hist-current", R"([{"profile": "current", "documented": {"jit": "x"}}])"),
                         ": /history/0/profile: 'current' is not a historical profile"));
  EXPECT_TRUE(load_fails(with_history("hist-unknown", R"([{"profile": "v9", "documented": {"jit": "x"}}])"),
                         ": /history/0/profile: replay: unknown profile 'v9'"));
  EXPECT_TRUE(load_fails(with_history("hist-transform", R"([{"profile": "v0.7.1", "documented": {"grad": "x"}}])"),
                         ": /history/0/documented/grad: 'grad' is not a transform"));
  EXPECT_TRUE(load_fails(with_history("hist-text", R"([{"profile": "v0.7.1", "documented": {"jit": 3}}])"),
                         ": /history/0/documented/jit: expected a string"));
  EXPECT_TRUE(load_fails(with_history("hist-empty", "[]"), ": /history: expected a non-empty array"));
}

TEST(Lab, ReportsAreWrittenWholeAndTheDirectoryCheckedFirst) {
  TempDir d;
  auto results = run_scenario(load_scenario(d.write("concat-rep.json", concat("concat-rep", "20.0"))), {});
  const std::string dir = (d.path / "out").string();
  prepare_report_dir(dir);
  write_reports(dir, results, {"jxlab test", "abc123", "here", "2026-11-22T00:00:00Z", 1.5});
  std::ifstream jf(dir + "/report.json");
  auto j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["commit"], "abc123");
  std::ifstream xf(dir + "/junit.xml");
  std::string xml((std::istreambuf_iterator<char>(xf)), {});
  EXPECT_NE(xml.find("<testsuite name=\"concat-rep\" tests=\"2\" failures=\"0\""), std::string::npos) << xml;
  std::ifstream mf(dir + "/summary.md");
  std::string md((std::istreambuf_iterator<char>(mf)), {});
  EXPECT_NE(md.find("**2 passed, 0 failed, 0 errors (crash, timeout, oom), 0 skipped**"), std::string::npos) << md;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << e.path();
  // a path under a regular file can never be a report directory
  const std::string file = d.write("plain-file", "x");
  EXPECT_TRUE(jxt::throws_with<Error>([&] { prepare_report_dir(file + "/reports"); },
                                      {"report directory", "cannot create it"}));
}

TEST(Lab, AnUnavailableBackendIsSkippedWithItsReason) {
  TempDir d;
  d.write("isnan-41.json", R"({"id": "isnan-41", "title": "t", "source": "s",
    "workload": {"name": "isnan41"}, "transform": "jit", "backends": ["cpu", "vulkan"],
    "cases": [{"profile": "current", "expect": {"values": {"expected": {"out0": [0, 1, 0, 1]}}}}]})");
  // (JX_DEVICE unset: a default device that is unavailable is an error of its own at start-up)
  const std::string cmd =
      fmt::format("env -u JX_DEVICE JX_VULKAN_DEVICE=99 {} run isnan-41 --scenarios {} --report {} > {} 2>&1",
                  jxlab_path(), d.path.string(), (d.path / "rep").string(), (d.path / "log").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream jf(d.path / "rep" / "report.json");
  ASSERT_TRUE(jf.good());
  auto j = nlohmann::json::parse(jf);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["status"], "pass");
  EXPECT_EQ(j["results"][1]["status"], "skipped");
  EXPECT_NE(j["results"][1]["skip_reason"].get<std::string>().find("JX_VULKAN_DEVICE"), std::string::npos)
      << j["results"][1]["skip_reason"];
  // unknown ids and bad shards are errors before any work
  EXPECT_NE(
      std::system(
          fmt::format("{} run no-such-id --scenarios {} > /dev/null 2>&1", jxlab_path(), d.path.string()).c_str()),
      0);
  EXPECT_NE(
      std::system(fmt::format("{} run --all --shard 3/2 --scenarios {} > /dev/null 2>&1", jxlab_path(), d.path.string())
                      .c_str()),
      0);
}

TEST(Soak, TrendFitFlagsGrowthButNotNoise) {
  // flat with ±1 MiB noise: no trend
  std::vector<double> flat;
  for (int i = 0; i < 12; ++i) flat.push_back(200000 + ((i * 7919) % 3 - 1) * 1024.0);
  const Trend f = rss_trend(flat);
  EXPECT_FALSE(f.growing) << f.growth_kb;
  // +1 MiB per round over 12 rounds: 11 MiB fitted > max(2% of 200 MB = 4000 KiB, 4 MiB)
  std::vector<double> up;
  for (int i = 0; i < 12; ++i) up.push_back(200000 + 1024.0 * i);
  const Trend u = rss_trend(up);
  EXPECT_TRUE(u.growing);
  EXPECT_NEAR(u.slope_kb, 1024.0, 1e-6);
  EXPECT_NEAR(u.growth_kb, 11 * 1024.0, 1e-6);
  EXPECT_FALSE(rss_trend({1e5}).growing);  // one point: nothing to fit
}

// JUnit XML of messages with what XML 1.0 forbids (terminal colours, other controls, bytes that
// are not UTF-8): escaped or replaced, so an XML parser (expat) accepts the file.
TEST(Lab, JunitEscapesWhatXmlForbids) {
  TempDir d;
  CaseResult r;
  r.scenario = "ctl<&>\"";
  r.backend = "cpu";
  r.profile = "current";
  r.status = "fail";
  r.failures = {
      "\x1b[31mred\x1b[0m \x01\x02 tab\tok, bad bytes \xff\xfe \xc0\xaf \xed\xa0\x80, kept: \xc3\xa9 \xe2\x82\xac "
      "\xf0\x9f\x98\x80"};
  const std::string xml = junit_xml({r}, {"jxlab test", "abc123", "here", "2026-11-22T00:00:00Z", 1.5});
  XML_Parser parser = XML_ParserCreate("UTF-8");
  const bool parsed = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), 1) == XML_STATUS_OK;
  EXPECT_TRUE(parsed) << "expat: " << XML_ErrorString(XML_GetErrorCode(parser)) << " at line "
                      << XML_GetCurrentLineNumber(parser) << ":\n"
                      << xml;
  XML_ParserFree(parser);
  EXPECT_NE(xml.find("\\x1b[31mred\\x1b[0m \\x01\\x02 tab\tok"), std::string::npos) << xml;
  EXPECT_NE(xml.find("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string::npos) << xml;  // valid UTF-8 kept
  EXPECT_NE(xml.find("bytes \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd"), std::string::npos)
      << xml;  // U+FFFD per bad byte
  EXPECT_NE(xml.find("ctl&lt;&amp;&gt;&quot;"), std::string::npos) << xml;
}

// A 100,000-deep array (it crashed the loader while being echoed into the error) is refused
// while it is read, with a short message; so is one inside a DLM input.
TEST(Lab, DeepNestingIsRefusedWithAShortMessage) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text : {deep, R"({"id": "deep", "title": )" + deep + "}"}) {
    try {
      (void)parse_scenario(text, "deep.json");
      ADD_FAILURE() << "accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("deep.json: /: nested deeper than 64 levels"), std::string::npos)
          << e.what();
      EXPECT_LT(std::string(e.what()).size(), 200u);
    }
  }
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { (void)dlm::parse_input(R"({"y": )" + deep + "}", "d.json"); },
                                           {"d.json: nested deeper than 64 levels"}));
}
