#pragma once
// Reading DLM inputs (the fixtures' JSON form, or CSV with one column) and writing results in
// the layout of the toolbox's *-out-m.json files. Every problem is a jx::ShapeError naming the
// field (or CSV line) and the reason.
#include <nlohmann/json.hpp>
#include <string>

#include "workloads/dlm/dlm.h"
#include "workloads/dlm/dlm_write.h"

namespace jx::dlm {

struct Input {
  std::vector<double> y;  // NaN = missing
  std::vector<double> s;  // one value (scalar) or one per observation
  std::vector<double> w;
  Options options;
  // covariates: X [n][q] and (forecast) their future values X_forecast [h][q]; empty when none
  std::vector<std::vector<double>> X, X_forecast;
};
// Rows of numbers as an array [rows, q] (float64).
Array matrix(const std::vector<std::vector<double>>& rows);

// JSON (validated), or CSV of y alone when the text is not JSON (validate after adding s, w).
Input parse_input(const std::string& text, const std::string& name);
void validate(const Input& in, const std::string& name);
Input read_input(const std::string& path);
// A result's output fields, in the toolbox's layouts (states [m,n], covariances [m,m,n]).
std::vector<Field> fields(const Fit& f);
std::vector<Field> fields(const Forecast& f);
// The summary fields after the arrays (lik, s2, mse, mape, ssy, nobs, XX, class).
void summary_fields(const Fit& f, std::vector<Field>& out);
nlohmann::json to_json(const Fit& f);
nlohmann::json to_json(const Forecast& f);

}  // namespace jx::dlm
