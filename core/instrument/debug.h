#pragma once
#include <string>

namespace jx {

// 0 off, 1 compile logs (and scan-path choices), 2 generated code, 3 kernel expressions,
// 4 programs. Printed to stderr with a "[jx]" prefix. JX_DEBUG sets the initial level.
void set_debug(int level);
int debug_level();
void debug_log(int level, const std::string& msg);

// JX_DUMP_SOURCES=DIR: every generated source a backend compiles (GLSL shaders, C translation
// units) is also written to DIR/<64-bit FNV-1a of the text>.<ext>, so two builds' renderers can be
// compared shader by shader (scripts/render-diff). No-op without the variable.
void dump_source(const std::string& text, const char* ext);

// This process's resident set size in KiB (/proc/self/statm).
double process_rss_kb();

}  // namespace jx
