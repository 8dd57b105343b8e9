#pragma once
#include <string>

namespace jx::lab {

// jxlab diff OLD NEW [--json] [--out FILE]: OLD and NEW are report folders or report.json files
// (reports/diff.h says what is compared). Markdown on stdout (JSON with --json); FILE gets the
// same text. Exit 1 when NEW regresses against OLD, 0 otherwise; a missing or malformed report
// is a usage error (exit 2).
int cmd_diff(const std::string& old_path, const std::string& new_path, bool as_json, const std::string& out);

}  // namespace jx::lab
