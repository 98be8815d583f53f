// The host as its files show it (sysfs, procfs, /dev/shm), read under a root prefix so that tests can hand the
// checks a made-up tree: FABRICBENCH_TEST_SYSROOT=/path (with "%h" replaced by the host name, so that fake hosts
// of an emulated cluster each get their own tree). Also the readers that turn those files into facts: RDMA ports,
// PCI devices, NUMA nodes, THP, buddyinfo, kernel modules, PCIe ACS.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::facts {

class HostFiles {
 public:
  explicit HostFiles(std::string root = "") : root_(std::move(root)) {}
  // The root the test hook FABRICBENCH_TEST_SYSROOT names for `host`, else the real filesystem.
  static HostFiles for_host(const std::string& host);
  // The root `sysroot` names for `host` ("%h" becomes the host's name); empty: the real filesystem.
  static HostFiles for_host(const std::string& host, std::string sysroot);
  const std::string& root() const { return root_; }
  bool real() const { return root_.empty(); }

  std::string path(std::string_view p) const { return root_ + std::string(p); }
  bool exists(std::string_view p) const;
  std::optional<std::string> read(std::string_view p) const;  // whole file, trailing newlines removed
  std::string line(std::string_view p) const;                 // first line, or ""
  std::optional<std::uint64_t> number(std::string_view p) const;
  std::vector<std::string> list(std::string_view dir) const;  // entry names, sorted
  // The path a link resolves to, with the root taken off again ("" when it does not resolve).
  std::string resolve(std::string_view p) const;

 private:
  std::string root_;
};

// One RDMA port from /sys/class/infiniband/<device>/ports/<n>.
struct RdmaPort {
  std::string device;  // "mlx5_0"
  int port = 1;
  std::string state;       // "ACTIVE" (from "4: ACTIVE")
  std::string phys_state;  // "LinkUp"
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  std::string rate;        // "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;    // the rate in Gb/s (10^9 bit/s)
  std::string netdev;      // Ethernet: the interface of GID 0
  bool roce_v2 = false;    // a RoCE v2 GID is present
  std::string firmware;
  int numa_node = -1;
  std::string pci_address;                        // "0000:17:00.0" ("" for software devices such as rxe)
  std::map<std::string, std::uint64_t> counters;  // counters/ and hw_counters/ (hw_ prefix)
  std::string name() const { return device + "/" + std::to_string(port); }
  bool active() const { return state == "ACTIVE"; }
};
std::vector<RdmaPort> read_rdma_ports(const HostFiles& files);

// The error counters ibcheckerrors looks at, with a readable name each, and transmit wait (congestion, not an error).
struct PortCounter {
  const char* file;
  const char* label;
};
const std::vector<PortCounter>& port_error_counters();
inline constexpr const char* xmit_wait_counter = "port_xmit_wait";

// "always [madvise] never" -> "madvise".
std::string bracketed_choice(std::string_view line);
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
std::set<int> parse_cpu_list(std::string_view text);
// CPU -> NUMA node from /sys/devices/system/node/node*/cpulist (empty on machines without the folder).
std::map<int, int> cpu_nodes(const HostFiles& files);
// /proc/modules: the names of loaded modules.
std::set<std::string> loaded_modules(const HostFiles& files);

// /proc/buddyinfo summed over every zone: free pages per order (0..10).
std::vector<std::uint64_t> buddy_free_pages(std::string_view buddyinfo);
// The share of free memory (0..1) in blocks of at least 2^order pages.
double free_share_at_or_above(const std::vector<std::uint64_t>& free_pages, int order);

// PCI devices of the host by class prefix ("0302" 3D controller, "0300" VGA) and vendor ("0x10de" NVIDIA).
std::vector<std::string> pci_devices(const HostFiles& files, std::string_view vendor,
                                     const std::vector<std::string>& class_prefixes);
int pci_numa_node(const HostFiles& files, const std::string& address);
// The bridges above a PCI device, nearest the root first ("0000:00:01.0", "0000:01:00.0" ...), from its sysfs path.
std::vector<std::string> pci_upstream(const HostFiles& files, const std::string& address);
// The bridges between two devices: those above either one but not above both.
std::vector<std::string> pci_bridges_between(const std::vector<std::string>& up_a,
                                             const std::vector<std::string>& up_b);

// PCIe Access Control Services from a device's config space (the extended capabilities from 0x100): nullopt when
// the config space is too short to hold them (read without root: 256 bytes), else the ACS control bits.
struct AcsControl {
  bool present = false;
  std::uint16_t control = 0;
  bool redirects() const { return (control & 0x000c) != 0; }  // P2P Request / Completion Redirect
};
std::optional<AcsControl> parse_acs(const std::string& config);

}  // namespace fabricbench::facts
