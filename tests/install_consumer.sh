#!/usr/bin/env bash
# cmake --install puts libjx, its headers, a CMake package and a pkg-config file where another
# project finds them: a consumer configured with find_package(jx) and one compiled with
# pkg-config both build and run against the install tree (not the source tree).
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
B=$1
S=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
if expect 0 "cmake --install" "" cmake --install "$B" --prefix "$T/prefix"; then
  for f in lib/libjx.so include/jx/core/jx.h lib/cmake/jx/jxConfig.cmake lib/cmake/jx/jxTargets.cmake lib/pkgconfig/jx.pc; do
    [ -e "$T/prefix/$f" ] || no "installed: $f missing"
  done
  ok "installed: library, headers, package config, pkg-config"
  # the consumer's source is copied away from the tree: only the install tree can satisfy it
  cp -r "$S/tests/install_consumer" "$T/src"
  if expect 0 "configure a find_package(jx) consumer" "" cmake -S "$T/src" -B "$T/build" -DCMAKE_PREFIX_PATH="$T/prefix" -DCMAKE_BUILD_TYPE=Release; then
    expect 0 "build it" "" cmake --build "$T/build" && expect 0 "run it" "" "$T/build/consumer" &&
      { grep -q '^grad 2 4 6$' "$T/out" && ok "find_package(jx) consumer: grad 2 4 6" || no "consumer printed $(cat "$T/out")"; }
    grep -q "$S/core" "$T/build/CMakeFiles/consumer.dir/flags.make" && no "the consumer compiled against the source tree" || ok "include paths from the install tree"
  fi
  if expect 0 "pkg-config jx" "" env PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig" pkg-config --cflags --libs jx; then
    flags=$(cat "$T/out")
    # shellcheck disable=SC2086
    expect 0 "compile with pkg-config's flags" "" c++ "$T/src/main.cc" -o "$T/pc" $flags && expect 0 "run the pkg-config build" "" "$T/pc" &&
      ok "pkg-config consumer: $(cat "$T/out")"
  fi
fi
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
