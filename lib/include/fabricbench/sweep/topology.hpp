// The switch tree a sweep judges against, read from Slurm's topology.conf format:
//   SwitchName=leaf1 Nodes=node[001-032] [Rail=R] [LinkSpeed=N]
//   SwitchName=spine1 Switches=leaf[1-8] [Rail=R]
// A switch with Nodes= is a leaf; a Rail= key says which rail's NICs hang off it (none: every rail's). Several files
// are one per rail (file k describes rail k). Hosts of the file that are not in the job are ignored (a
// topology.conf describes the whole cluster); a job host under no leaf on a rail the sweep tests is an error.
#pragma once
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::sweep {

// Slurm's hostlist expression: "node[001-032]", "a[1-2]-b[3,5]", "h1,h2,rack[1-2]" (zero padding kept from the
// lower bound). Throws Error::usage naming `where` on a bad expression.
std::vector<std::string> expand_host_list(std::string_view text, std::string_view where);

struct Switch {
  std::string name;
  int rail = -1;  // -1: every rail
  int line = 0;   // where it was declared (file `file`)
  int file = 0;
  std::vector<int> hosts;     // a leaf: the job's hosts under it
  std::vector<int> children;  // switches under it
  int parent = -1;            // the switch above (-1: at the top)
  bool leaf() const { return children.empty(); }
};

class Topology {
 public:
  // Reads `paths` (one file, or one per rail). Every bad line, an unknown switch below Switches=, a switch under two
  // parents, a cycle, a host under two leaves of one rail and a job host under no leaf of a rail below `rails` is
  // Error::usage naming the file and line.
  static Topology read(const std::vector<std::string>& paths, const std::vector<std::string>& hosts, int rails);
  // One file's text (`rail_of_file` >= 0: the file describes that rail only).
  void parse(std::istream& in, std::string_view source, int rail_of_file);
  // After every file: links parents, checks cycles and that each job host has a leaf on every rail below `rails`.
  void finish(int rails);

  explicit Topology(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {}
  const std::vector<Switch>& switches() const { return switches_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  // The leaf switch of `host` on `rail` (index into switches()), -1 where none. O(1) after finish().
  int leaf_of(int host, int rail) const;
  // The leaves that serve `rail`, in declaration order.
  std::vector<int> leaves(int rail) const;
  // The name of the switch above `leaf` ("" at the top).
  std::string parent_name(int leaf) const;

 private:
  std::string where(const Switch& s) const;
  std::vector<std::string> hosts_, files_;
  std::vector<Switch> switches_;
  std::vector<std::vector<std::string>> child_names_;  // per switch, as written (linked in finish)
  std::map<std::string, int> host_index_;              // hosts_ by name (filled by the first Nodes=)
  int indexed_rails_ = 0;
  std::vector<int>
      leaf_index_;  // host * indexed_rails_ + rail -> leaf (made by finish: leaf_of is in the judge's loops)
};

}  // namespace fabricbench::sweep
