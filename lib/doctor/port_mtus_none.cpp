#include "port_mtus.hpp"

namespace fabricbench::doctor {

std::map<std::string, int> active_port_mtus() { return {}; }

}  // namespace fabricbench::doctor
