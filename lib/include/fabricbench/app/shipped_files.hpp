// Where the files that ship with fabricbench (configs/: presets, sweep rules, baselines) are found at run time:
// $FABRICBENCH_DATA_DIR, else <the executable's folder>/../share/fabricbench, the layout of both the build tree
// and an installed prefix. Never a path compiled in from the build machine, so a carried or installed build
// finds its files wherever it is.
#pragma once
#include <string>
#include <string_view>

namespace fabricbench::app {

// The folder holding configs/ (may not exist: callers report the missing file with its path).
std::string data_dir();
// data_dir() + "/configs/" + name.
std::string shipped_config(std::string_view name);
// fabricbench's NCCL profiler plugin, beside the tools: <the executable's folder>/../lib/libnccl-profiler-
// fabricbench.so (an installed prefix's lib/, a build tree's <build>/lib); fabric-watchdog --slow, fabric-coll
// --per-rank.
std::string profiler_plugin();

}  // namespace fabricbench::app
