// report.html's plots (inline SVG, axes fitted to the data, log scales when a quantity spans more
// than a decade, the legend beside the plot area, never over the data) and its baseline diff.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <vector>

#include "reports/html.h"

namespace jx::lab {
namespace {

using nlohmann::json;

struct Series {
  std::string name;  // backend/profile
  std::vector<std::pair<double, double>> xy;
};

// One axis: its range and whether it is logarithmic; maps a value to [0, 1].
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  static Axis fit(const std::vector<double>& v) {
    Axis a;
    if (v.empty()) return a;
    const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
    a.lo = *mn, a.hi = *mx;
    a.log = a.lo > 0 && a.hi / a.lo > 10;
    if (a.hi == a.lo) a.lo = a.lo > 0 && !a.log ? 0 : a.lo - 1, a.hi = a.hi + (a.hi == 0 ? 1 : std::abs(a.hi) * 0.1);
    return a;
  }
  double at(double x) const {
    return log ? (std::log(x) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (x - lo) / (hi - lo);
  }
};

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string svg_plot(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                     const std::vector<Series>& series) {
  std::vector<double> xs, ys;
  for (const auto& s : series)
    for (auto [x, y] : s.xy) xs.push_back(x), ys.push_back(y);
  const Axis ax = Axis::fit(xs), ay = Axis::fit(ys);
  const double L = 70, T = 30, W = 360, H = 220, legend_x = L + W + 20;  // plot area; the legend to its right
  std::string s =
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\"><title>{}</title>",
                  legend_x + 200, T + H + 50, html_escape(title));
  s += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"600\">{}</text>", L, html_escape(title));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>", L, T, W, H);
  for (int k = 0; k <= 4; ++k) {  // ticks: five per axis, in data units
    const double fx = ax.log ? std::exp(std::log(ax.lo) + k / 4.0 * (std::log(ax.hi) - std::log(ax.lo)))
                             : ax.lo + k / 4.0 * (ax.hi - ax.lo);
    const double fy = ay.log ? std::exp(std::log(ay.lo) + k / 4.0 * (std::log(ay.hi) - std::log(ay.lo)))
                             : ay.lo + k / 4.0 * (ay.hi - ay.lo);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.3g}</text>",
                     L + k / 4.0 * W, T + H + 14, fx);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.3g}</text>", L - 4,
                     T + H - k / 4.0 * H + 3, fy);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}{}</text>", L + W / 2, T + H + 32,
                   html_escape(xlabel), ax.log ? " (log)" : "");
  s += fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}{}</text>",
      T + H / 2, T + H / 2, html_escape(ylabel), ay.log ? " (log)" : "");
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* c = kColors[i % std::size(kColors)];
    std::string pts;
    for (auto [x, y] : series[i].xy) pts += fmt::format("{:.1f},{:.1f} ", L + ax.at(x) * W, T + H - ay.at(y) * H);
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>", c, pts);
    for (auto [x, y] : series[i].xy)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", L + ax.at(x) * W,
                       T + H - ay.at(y) * H, c);
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"2\"/><text x=\"{4}\" "
        "y=\"{5}\" font-size=\"11\">{6}</text>",
        legend_x, legend_x + 18, T + 10 + 16.0 * i, c, legend_x + 24, T + 14 + 16.0 * i, html_escape(series[i].name));
  }
  return s + "</svg>";
}

}  // namespace

std::string sweep_plots(const json& results) {
  // per scenario: its sweep parameter's points, one series per backend/profile
  std::map<std::string, std::pair<std::vector<Series>, std::vector<Series>>> by;  // seconds, dispatches
  for (const json& r : results) {
    Series secs{r.value("backend", "") + "/" + r.value("profile", ""), {}}, disp = secs;
    for (const json& p : r.value("measured", json::object()).value("points", json::array()))
      if (p.contains("param") && p["param"].is_number() && !p.contains("error")) {
        secs.xy.emplace_back(p["param"].get<double>(), p.value("seconds", 0.0));
        disp.xy.emplace_back(p["param"].get<double>(), p.value("dispatches", 0.0));
      }
    if (secs.xy.size() < 2) continue;
    auto& [s, d] = by[r.value("scenario", "")];
    s.push_back(secs), d.push_back(disp);
  }
  if (by.empty()) return "";
  std::string s = "<h2>Sweeps</h2><div class=\"plots\">";
  for (const auto& [id, sd] : by) {
    s += "<div>" + svg_plot(id + ": seconds", "swept parameter", "seconds per call", sd.first) +
         svg_plot(id + ": dispatches", "swept parameter", "dispatches", sd.second) + "</div>";
  }
  return s + "</div>";
}

std::string diff_section(const json& d) {
  std::string s = fmt::format("<h2>Against the baseline ({} at {})</h2><p class=\"{}\">{} regression{}</p>",
                              html_escape(d["old"].value("commit", "")), html_escape(d["old"].value("started", "")),
                              d.value("regressions", 0) ? "regression" : "pass", d.value("regressions", 0),
                              d.value("regressions", 0) == 1 ? "" : "s");
  auto table = [&](const char* key, const std::vector<std::string>& cols) {
    if (!d.contains(key) || d[key].empty()) return;
    s += fmt::format("<h3>{}</h3><table><tr>", key);
    for (const auto& c : cols) s += "<th>" + c + "</th>";
    s += "<th></th></tr>";
    for (const json& r : d[key]) {
      s += "<tr>";
      for (const auto& c : cols)
        s += "<td>" + html_escape(r.contains(c) ? (r[c].is_string() ? r[c].get<std::string>() : r[c].dump()) : "") +
             "</td>";
      s += std::string("<td>") + (r.value("regression", false) ? "<span class=\"regression\">regression</span>" : "") +
           "</td></tr>";
    }
    s += "</table>";
  };
  table("status", {"case", "old", "new", "failure"});
  table("appeared", {"case", "status"});
  table("vanished", {"case", "status"});
  table("counters", {"case", "point", "counter", "old", "new"});
  table("timing", {"case", "old", "new", "ratio", "change"});
  return s;
}

}  // namespace jx::lab
