// The active MTU of every RDMA port, as the verbs library reports it (device/port -> bytes): in port_mtus_verbs.cpp
// with libibverbs, port_mtus_none.cpp without (an empty map: the MTU checks then skip with their reason).
#pragma once
#include <map>
#include <string>

namespace fabricbench::doctor {

std::map<std::string, int> active_port_mtus();

}  // namespace fabricbench::doctor
