#include "fabricbench/tools/watchdog/watchdog_tool.hpp"

int main(int argc, char** argv) { return fabricbench::tools::watchdog::main(argc, argv); }
