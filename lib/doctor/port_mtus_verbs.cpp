#include "fabricbench/verbs/verbs.hpp"
#include "port_mtus.hpp"

namespace fabricbench::doctor {

std::map<std::string, int> active_port_mtus() { return verbs::active_mtus(); }

}  // namespace fabricbench::doctor
