// fabric-sweep's metric table: every metric names a test its family's table has, so that the pair tests, the
// expected figure and the NIC book reach the right tool's measurement by type, never by an empty string.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"
#ifdef FABRICBENCH_HAVE_VERBS
#include "fabricbench/verbs/verbs_test.hpp"
#endif

using namespace fabricbench;
using namespace fabricbench::sweep;
using namespace fabricbench::tools::sweep;

TEST(SweepMetrics, EachNamesATestOfItsFamilysTable) {
  std::set<std::string_view> names;
  for (const auto& m : sweep_metrics()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    switch (m.family) {
      case MetricFamily::p2p:
        EXPECT_EQ(m.p2p().name, m.test) << m.name;
        EXPECT_THROW(m.op(), Error) << m.name;
        break;
      case MetricFamily::collective:
        EXPECT_EQ(m.op().name, m.test) << m.name;
        EXPECT_THROW(m.p2p(), Error) << m.name;
        break;
      case MetricFamily::rdma:
#ifdef FABRICBENCH_HAVE_VERBS
        EXPECT_NE(verbs::find_verbs_test(m.test), nullptr) << m.name;
#endif
        EXPECT_THROW(m.p2p(), Error) << m.name;
        break;
    }
  }
  // The collectives each run their own operation (a new collective metric never silently runs all_reduce).
  const auto& all = sweep_metrics();
  const auto find = [&](std::string_view n) {
    return *std::find_if(all.begin(), all.end(), [&](const SweepMetric& m) { return m.name == n; });
  };
  EXPECT_EQ(find("sendrecv").op().kind, ops::CollKind::sendrecv);
  EXPECT_EQ(find("allreduce").op().kind, ops::CollKind::all_reduce);
  EXPECT_EQ(find("p2p_bibw").p2p().directions, 2);
}

// A new metric is its table entry and its [section] of rules: the shipped rules have one for every metric.
TEST(SweepMetrics, TheShippedRulesJudgeEveryMetric) {
  const auto rules = Rules::load(app::shipped_config("sweep.ini"));
  for (const auto& m : sweep_metrics()) EXPECT_NO_THROW(rules.rule(std::string(m.name))) << m.name;
}
