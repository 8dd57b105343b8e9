#include "reports/html.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

namespace jx::lab {
namespace {

using nlohmann::json;

std::string esc(const std::string& s) { return html_escape(s); }

}  // namespace

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

const char* kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}tr.case{cursor:pointer}tr.detail td{background:#fafafa}
.pass{color:#17692c;font-weight:600}.fail,.crash,.timeout,.oom{color:#b00020;font-weight:600}.skipped{color:#777}
pre{margin:0;white-space:pre-wrap;max-width:60em}.meta td:first-child{font-weight:600}
.filters label{margin-right:1em}.plots svg{margin:.5em 1em .5em 0;border:1px solid #ddd}
.regression{color:#b00020;font-weight:600}
</style>)";

// Filters rows by the selects and the text box; the initial filter comes from the URL hash.
const char* kScript = R"(<script>
(function () {
  const ids = ['status', 'backend', 'profile'];
  const rows = Array.from(document.querySelectorAll('tr.case'));
  function apply() {
    const want = {};
    ids.forEach(k => { want[k] = document.getElementById('f-' + k).value; });
    const text = document.getElementById('f-text').value.toLowerCase();
    let shown = 0;
    rows.forEach(r => {
      const ok = ids.every(k => !want[k] || r.dataset[k] === want[k]) && (!text || r.textContent.toLowerCase().includes(text));
      r.hidden = !ok;
      const d = document.getElementById(r.dataset.detail);
      if (d && !ok) d.hidden = true;
      if (ok) shown++;
    });
    document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' cases shown';
  }
  const hash = new URLSearchParams(location.hash.slice(1));
  ids.forEach(k => {  // a value no row has is still a filter (it shows none): add it as an option
    const v = hash.get(k), sel = document.getElementById('f-' + k);
    if (!v) return;
    if (!Array.from(sel.options).some(o => o.value === v)) sel.add(new Option(v, v));
    sel.value = v;
  });
  if (hash.get('text')) document.getElementById('f-text').value = hash.get('text');
  ids.concat(['text']).forEach(k => document.getElementById('f-' + k).addEventListener('input', apply));
  rows.forEach(r => r.addEventListener('click', () => {
    const d = document.getElementById(r.dataset.detail);
    if (d) d.hidden = !d.hidden;
  }));
  apply();
  document.body.dataset.ready = '1';
})();
</script>)";

std::string metadata(const json& rep) {
  std::string s = "<h2>Run</h2><table class=\"meta\">";
  auto row = [&](const std::string& k, const std::string& v) {
    s += fmt::format("<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
  };
  row("started", str(rep, "started"));
  row("seconds", fmt::format("{:.1f}", rep.value("seconds", 0.0)));
  row("version", str(rep, "version"));
  row("commit", str(rep, "commit"));
  row("machine", str(rep, "machine"));
  if (rep.value("interrupted", false)) row("interrupted", "yes: the finished cases only");
  if (rep.contains("context") && rep["context"].is_object())
    for (auto it = rep["context"].begin(); it != rep["context"].end(); ++it)
      row(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  return s + "</table>";
}

std::string select(const std::string& id, const std::set<std::string>& values) {
  std::string s = fmt::format("<label>{} <select id=\"f-{}\"><option value=\"\">all</option>", id, id);
  for (const auto& v : values) s += fmt::format("<option>{}</option>", esc(v));
  return s + "</select></label>";
}

// What one case measured, point by point.
std::string measured_table(const json& m) {
  const json pts = m.value("points", json::array());
  if (pts.empty()) return "<p>no point measured</p>";
  std::string s =
      "<table><tr><th>param</th><th>seconds</th><th>dispatches</th><th>submits</th><th>max buffers</th><th>leaked</th>"
      "<th>scan paths</th><th>error</th></tr>";
  for (const json& p : pts) {
    const json sr = p.value("seconds_rounds", json::object());
    const std::string secs = sr.contains("median") ? fmt::format("{:.4g} [{:.4g}, {:.4g}]", sr["median"].get<double>(),
                                                                 sr["min"].get<double>(), sr["max"].get<double>())
                                                   : fmt::format("{:.4g}", p.value("seconds", 0.0));
    const std::string err = p.contains("error") ? str(p["error"], "type") + ": " + str(p["error"], "message") : "";
    s +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(p.contains("param") ? p["param"].dump() : ""), secs, p.value("dispatches", 0),
                    p.contains("submits") ? p["submits"].dump() : "", p.value("max_buffers_per_dispatch", 0),
                    p.value("leaked_slots", 0), esc(p.value("scan_paths", json::array()).dump()), esc(err));
  }
  return s + "</table>";
}

std::string case_rows(const json& r, std::size_t i) {
  const std::string status = str(r, "status"), id = fmt::format("d{}", i);
  const json m = r.value("measured", json::object());
  const json pts = m.value("points", json::array());
  std::int64_t disp = 0, bufs = 0;
  std::set<std::string> paths;
  for (const json& p : pts) {
    disp += p.value("dispatches", 0);
    bufs = std::max<std::int64_t>(bufs, p.value("max_buffers_per_dispatch", 0));
    for (const json& sp : p.value("scan_paths", json::array())) paths.insert(sp.get<std::string>());
  }
  std::string failures;
  for (const json& f : r.value("failures", json::array())) failures += esc(f.get<std::string>()) + "\n";
  if (!str(r, "skip_reason").empty()) failures += "skipped: " + esc(str(r, "skip_reason"));
  std::string s = fmt::format(
      "<tr class=\"case\" data-status=\"{0}\" data-backend=\"{1}\" data-profile=\"{2}\" "
      "data-detail=\"{3}\"><td>{4}</td><td>{1}</td><td>{2}</td>"
      "<td class=\"{0}\">{0}</td><td>{5:.4g}</td><td>{6}</td><td>{7}</td><td>{8}</td><td><pre>{9}</pre></td></tr>",
      esc(status), esc(str(r, "backend")), esc(str(r, "profile")), id, esc(str(r, "scenario")), r.value("seconds", 0.0),
      disp, bufs, esc(fmt::format("{}", fmt::join(paths, ", "))), failures);
  s += fmt::format(
      "<tr class=\"detail\" id=\"{}\" hidden><td colspan=\"9\"><b>{}</b> "
      "({})<table><tr><th>expected</th><th>measured</th></tr>"
      "<tr><td><pre>{}</pre></td><td>{}</td></tr></table></td></tr>",
      id, esc(str(r, "title")), esc(str(r, "file")), esc(r.value("expect", json::object()).dump(2)), measured_table(m));
  return s;
}

std::string case_table(const json& results) {
  std::set<std::string> st, be, pr;
  for (const json& r : results) st.insert(str(r, "status")), be.insert(str(r, "backend")), pr.insert(str(r, "profile"));
  std::string s = "<h2>Cases</h2><div class=\"filters\">" + select("status", st) + select("backend", be) +
                  select("profile", pr) +
                  "<label>text <input id=\"f-text\" type=\"search\"></label><span id=\"shown\"></span></div>";
  s += "<table "
       "id=\"cases\"><tr><th>scenario</th><th>backend</th><th>profile</th><th>status</th><th>seconds</"
       "th><th>dispatches</th>"
       "<th>max buffers</th><th>scan paths</th><th>failures</th></tr>";
  for (std::size_t i = 0; i < results.size(); ++i) s += case_rows(results[i], i);
  return s + "</table><p>Click a row for its expectations beside what was measured.</p>";
}

}  // namespace

std::string html_report(const json& report, const json& diff) {
  const json results = report.value("results", json::array());
  std::map<std::string, int> counts;
  for (const json& r : results) ++counts[str(r, "status")];
  std::string summary;
  for (const auto& [k, v] : counts) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", v, esc(k));
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>jxlab run " +
                  esc(str(report, "started")) + "</title>" + kStyle + "</head><body>";
  s += fmt::format("<h1>jxlab run: {}</h1><p>{} cases: {}{}</p>", esc(str(report, "started")), results.size(),
                   summary.empty() ? "none" : summary, report.value("interrupted", false) ? " (interrupted)" : "");
  s += case_table(results) + sweep_plots(results);
  if (!diff.is_null()) s += diff_section(diff);
  s += metadata(report) + kScript + "</body></html>\n";
  return s;
}

}  // namespace jx::lab
