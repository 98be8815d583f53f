#include "fabricbench/tools/rail_exec/rail_exec_tool.hpp"

int main(int argc, char** argv) { return fabricbench::tools::rail_exec::main(argc, argv); }
