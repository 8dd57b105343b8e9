#pragma once
#include <string>

namespace jx {

// 0 off, 1 compile logs (and scan-path choices), 2 generated code, 3 kernel expressions,
// 4 programs. Printed to stderr with a "[jx]" prefix. JX_DEBUG sets the initial level.
void set_debug(int level);
int debug_level();
void debug_log(int level, const std::string& msg);

// This process's resident set size in KiB (/proc/self/statm).
double process_rss_kb();

}  // namespace jx
