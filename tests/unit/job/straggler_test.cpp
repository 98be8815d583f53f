// The slow-rank judge on hand-made records whose answer is computed by hand.
#include "fabricbench/job/straggler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

using fabricbench::job::SlowFinding;
using fabricbench::job::StragglerFinder;
namespace slow = fabricbench::job::slow;

constexpr std::int64_t kMs = 1000000;
constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

slow::Record record(std::uint64_t comm, std::uint64_t seq, int rank, int nranks, std::int64_t t_ns,
                    std::uint64_t kernel_ns, std::uint64_t bytes = 64 << 20) {
  slow::Record r{};
  r.comm = comm, r.seq = seq, r.rank = rank, r.nranks = nranks, r.host_ns = t_ns, r.bytes = bytes;
  r.gpu_start_ns = 5'000'000'000 + static_cast<std::uint64_t>(rank) * 777;  // each GPU its own clock
  r.gpu_stop_ns = r.gpu_start_ns + kernel_ns;
  r.op = 1;  // AllReduce
  return r;
}

// `n` collectives 100 ms apart from `t0` on 4 ranks; rank `slow_rank` (or none: -1) runs 0.3 ms, the others 27.3 ms;
// healthy, the ranks take turns being last by 0.2 ms.
void feed(StragglerFinder& j, std::int64_t t0, std::uint64_t seq0, int n, int slow_rank) {
  for (int i = 0; i < n; ++i)
    for (int rank = 0; rank < 4; ++rank) {
      std::uint64_t k;
      if (slow_rank >= 0)
        k = rank == slow_rank ? 300'000 : 27'300'000;
      else
        k = rank == i % 4 ? 300'000 : 500'000;
      j.add(static_cast<std::size_t>(rank), record(0x3f, seq0 + i, rank, 4, t0 + i * 100 * kMs, k));
    }
}

TEST(StragglerFinder, NamesTheRankThatArrivesLastAndWhatItCosts) {
  StragglerFinder j;
  feed(j, kT0, 0, 100, 2);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  EXPECT_EQ(w.collectives, 100u);
  ASSERT_EQ(w.findings.size(), 1u);
  const auto& f = w.findings[0];
  EXPECT_EQ(f.kind, SlowFinding::Kind::late);
  EXPECT_EQ(f.comm, 0x3fu);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.source, 2u);
  EXPECT_EQ(f.op, "AllReduce");
  EXPECT_DOUBLE_EQ(f.late_fraction, 1.0);
  EXPECT_NEAR(f.wait_median_s, 27.0e-3, 1e-9);
  // 100 waits of 27 ms over the 9.9 s the collectives span.
  EXPECT_NEAR(f.loss, 100 * 27.0e-3 / 9.9, 1e-9);
  ASSERT_FALSE(w.ranks.empty());
  EXPECT_EQ(w.ranks[0].rank, 2);
  EXPECT_NEAR(w.ranks[0].kernel_median_s, 0.3e-3, 1e-12);
  EXPECT_EQ(j.rows().size(), 400u);
}

TEST(StragglerFinder, HealthyRanksTakingTurnsAreNotNamed) {
  StragglerFinder j;
  feed(j, kT0, 0, 100, -1);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  EXPECT_TRUE(w.findings.empty());
  ASSERT_EQ(w.ranks.size(), 4u);  // each last at a quarter, costing 0.2 ms a time
  for (const auto& r : w.ranks) {
    EXPECT_EQ(r.late, 25u);
    EXPECT_NEAR(r.loss, 25 * 0.2e-3 / 9.9, 1e-9);
  }
}

TEST(StragglerFinder, NamedWhileItLastsAndNoMoreAfterAHealthyWindow) {
  StragglerFinder j;
  feed(j, kT0, 0, 100, 1);
  EXPECT_EQ(j.find(kT0 + 9900 * kMs).findings.size(), 1u);
  feed(j, kT0 + 10000 * kMs, 100, 50, -1);  // 5 s healthy: half the window still costs >= 5%
  EXPECT_EQ(j.find(kT0 + 14900 * kMs).findings.size(), 1u);
  feed(j, kT0 + 15000 * kMs, 150, 100, -1);
  EXPECT_TRUE(j.find(kT0 + 24900 * kMs).findings.empty());
}

TEST(StragglerFinder, NamedFromTheWaitingItCausesBeforeItIsLastAtHalfTheCollectives) {
  // 8 ranks taking turns for 10 s, then rank 5 late by 27 ms at every collective for 4 s: of the 101 collectives of
  // the last 10 s (3.9-13.9 s) it was last at 7 + 40 (47%), but it caused 1081 of the 1090 ms the ranks waited.
  StragglerFinder j;
  std::uint64_t seq = 0;
  for (int i = 0; i < 140; ++i, ++seq)
    for (int rank = 0; rank < 8; ++rank) {
      const bool slow = i >= 100;
      const std::uint64_t k = slow ? (rank == 5 ? 300'000 : 27'300'000) : (rank == i % 8 ? 300'000 : 450'000);
      j.add(rank, record(2, seq, rank, 8, kT0 + i * 100 * kMs, k));
    }
  const auto w = j.find(kT0 + 13900 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 5);
  EXPECT_NEAR(w.findings[0].late_fraction, 47.0 / 101, 1e-12);
  EXPECT_NEAR(w.findings[0].loss, (40 * 27e-3 + 7 * 0.15e-3) / 10.0, 1e-9);
}

TEST(StragglerFinder, AFewLongWaitsAreNotASlowRankWhereItMustBeLastAtMost) {
  // 100 collectives over 1 s on 2 ranks, ties (20 us apart) but at 3 of them, where rank 1 comes 40 ms late (out of a
  // check between sizes): all of the waiting and 12% of the second. The watchdog's rules name it; a benchmark's
  // (fabric-coll --per-rank: last at half the collectives at least) do not.
  const auto feed_run = [](StragglerFinder& j) {
    for (int i = 0; i < 100; ++i)
      for (int rank = 0; rank < 2; ++rank) {
        const bool boundary = i % 33 == 0 && i > 0;
        const std::uint64_t k = boundary ? (rank == 1 ? 300'000 : 40'300'000) : (rank == 1 ? 300'000 : 320'000);
        j.add(rank, record(8, i, rank, 2, kT0 + i * 10 * kMs, k));
      }
  };
  fabricbench::job::StragglerSettings watchdog;
  watchdog.window_s = 1e9;
  StragglerFinder named(watchdog);
  feed_run(named);
  const auto w = named.find(kT0 + 990 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_NEAR(w.findings[0].late_fraction, 0.03, 1e-12);
  auto bench = watchdog;
  bench.late = 0.5;
  StragglerFinder not_named(bench);
  feed_run(not_named);
  EXPECT_TRUE(not_named.find(kT0 + 990 * kMs).findings.empty());
}

TEST(StragglerFinder, TooFewCollectivesOrAShortWaitNameNobody) {
  StragglerFinder j;
  feed(j, kT0, 0, 9, 3);  // 9 < min_collectives
  EXPECT_TRUE(j.find(kT0 + 900 * kMs).findings.empty());
  StragglerFinder k;
  for (int i = 0; i < 100; ++i)  // rank 0 always last, by 40 us: a tie
    for (int rank = 0; rank < 2; ++rank)
      k.add(rank, record(1, i, rank, 2, kT0 + i * 10 * kMs, rank == 0 ? 1'000'000 : 1'040'000));
  const auto w = k.find(kT0 + 990 * kMs);
  EXPECT_TRUE(w.findings.empty());
  EXPECT_TRUE(w.ranks.empty());
}

TEST(StragglerFinder, ACollectiveEveryRankRunsSlowIsNamedInside) {
  StragglerFinder j;
  // 10 s at 1 ms, then 10 s at 21 ms on every rank alike (rank 0 always shortest by 0.1 ms: below any naming).
  const auto feed_own = [&](int from, int to, std::uint64_t own) {
    for (int i = from; i < to; ++i)
      for (int rank = 0; rank < 2; ++rank)
        j.add(rank, record(7, i, rank, 2, kT0 + i * 100 * kMs, own + (rank ? 100'000 : 0)));
  };
  feed_own(0, 100, 1'000'000);
  const auto first = j.find(kT0 + 9950 * kMs);
  EXPECT_TRUE(first.findings.empty());
  feed_own(100, 200, 21'000'000);
  const auto w = j.find(kT0 + 19950 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  const auto& f = w.findings[0];
  EXPECT_EQ(f.kind, SlowFinding::Kind::inside);
  EXPECT_EQ(f.rank, -1);
  EXPECT_EQ(f.bytes, 64u << 20);
  EXPECT_NEAR(f.own_s, 21e-3, 1e-12);
  EXPECT_NEAR(f.best_s, 1e-3, 1e-12);
  // 20 ms more on each of 100 collectives over the 9.9 s they span.
  EXPECT_NEAR(f.loss, 100 * 20e-3 / 9.9, 1e-9);
}

TEST(StragglerFinder, ARankThatStopsReportingIsCountedMissingNotNamed) {
  StragglerFinder j;
  for (int i = 0; i < 50; ++i)
    for (int rank = 0; rank < 3; ++rank)
      if (rank != 2 || i < 10) j.add(rank, record(9, i, rank, 3, kT0 + i * 100 * kMs, rank == 0 ? 100'000 : 900'000));
  const auto w = j.find(kT0 + 40 * 1000 * kMs);
  EXPECT_EQ(j.judged(), 10u);
  ASSERT_EQ(j.missing().count({9, 2}), 1u);
  EXPECT_EQ(j.missing().at({9, 2}), 40u);
  EXPECT_TRUE(w.findings.empty());  // the window holds nothing judged
}

TEST(StragglerFinder, IncompleteRecordsAndRepeatsAreLeftOut) {
  StragglerFinder j;
  for (int i = 0; i < 50; ++i)
    for (int rank = 0; rank < 2; ++rank) {
      auto r = record(4, i, rank, 2, kT0 + i * 100 * kMs, rank == 1 ? 100'000 : 20'000'000);
      j.add(rank, r);
      j.add(rank, r);  // a repeat
    }
  auto bad = record(4, 99, 0, 2, kT0, 1);
  bad.flags = slow::kIncomplete;
  j.add(0, bad);
  const auto w = j.find(kT0 + 4900 * kMs);
  EXPECT_EQ(j.judged(), 50u);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 1);
}

TEST(StragglerFinder, OneSlowRankAmongThousands) {
  StragglerFinder j;
  constexpr int kRanks = 4096;
  for (int i = 0; i < 20; ++i)
    for (int rank = 0; rank < kRanks; ++rank)
      j.add(rank, record(11, i, rank, kRanks, kT0 + i * 100 * kMs, rank == 1234 ? 50'000 : 30'000'000 + rank));
  const auto w = j.find(kT0 + 1900 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 1234);
  EXPECT_NEAR(w.findings[0].wait_median_s, (30'000'000 + 2048 - 50'000) * 1e-9, 2e-9);
  EXPECT_EQ(j.rows().size(), 20u * kRanks);
}

// A proxy send: `rank` to `peer` on `channel`, `bytes` (1 MiB) in `net_ns` of network time.
slow::Record send(std::uint64_t comm, std::uint64_t seq, int rank, int peer, int channel, std::int64_t t_ns,
                  std::uint64_t net_ns, std::uint64_t bytes = 1 << 20) {
  slow::ProxyRecord p{};
  p.comm = comm, p.seq = seq, p.rank = rank, p.peer = peer, p.channel = static_cast<std::uint8_t>(channel);
  p.is_send = 1, p.bytes = bytes, p.host_ns = t_ns, p.net_ns = net_ns, p.op_ns = net_ns + 1000, p.steps = 2;
  p.flags = slow::kProxy;
  return slow::as_record(p);
}

// 100 collectives 100 ms apart on a ring of 4 (r sends to r+1 on channels 0 and 1), 100 us of network time per
// 1 MiB send, but `slow_ns` on the connections in `slow`.
void feed_ring(StragglerFinder& j, std::vector<std::pair<int, int>> slow, std::uint64_t slow_ns, int ranks = 4,
               std::uint64_t healthy_ns = 100'000) {
  feed(j, kT0, 0, 100, -1);
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < ranks; ++r)
      for (int ch = 0; ch < 2; ++ch) {
        const std::pair<int, int> who{r, (r + 1) % ranks};
        const bool is_slow = std::find(slow.begin(), slow.end(), who) != slow.end();
        j.add(static_cast<std::size_t>(r),
              send(0x3f, i, r, who.second, ch, kT0 + i * 100 * kMs, is_slow ? slow_ns : healthy_ns));
      }
}

TEST(StragglerFinder, ASlowLinkIsNamedFromAndTo) {
  StragglerFinder j;
  feed_ring(j, {{2, 3}}, 20'000'000);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  const auto& f = w.findings[0];
  EXPECT_EQ(f.kind, SlowFinding::Kind::link);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.peer, 3);
  EXPECT_EQ(f.source, 2u);
  EXPECT_NEAR(f.ratio, 200, 1e-9);
  // Judged over the window's second half (from 4.85 s: collectives 49-99, 4.9 s to 9.9 s): 102 sends of 20 ms where
  // the usual rate needs 0.1 ms, over 2 channels, over the 5.0 s they span.
  EXPECT_NEAR(f.loss, 102 * 19.9e-3 / 2 / 5.0, 1e-9);
  // The run's totals: per connection, both channels.
  const auto& c = j.connections().at({0x3f, 2, 3, true});
  EXPECT_EQ(c.ops, 200u);
  EXPECT_EQ(c.channel_count(), 2u);
  EXPECT_NEAR(c.net_s, 4.0, 1e-9);
}

TEST(StragglerFinder, SlowConnectionsThatAllTouchOneRankNameItsNetwork) {
  StragglerFinder j;
  feed_ring(j, {{1, 2}, {2, 3}}, 20'000'000);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  const auto& f = w.findings[0];
  EXPECT_EQ(f.kind, SlowFinding::Kind::network);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.peer, -1);
  EXPECT_EQ(f.connections, (std::vector<std::pair<int, int>>{{1, 2}, {2, 3}}));
}

TEST(StragglerFinder, EvenNetworkTimeOrATwoRankPairSlowBothWaysNamesNoLink) {
  StragglerFinder healthy;
  feed_ring(healthy, {}, 0);
  EXPECT_TRUE(healthy.find(kT0 + 99 * 100 * kMs).findings.empty());
  // Slower, costing (200 x 18 ms - 200 x 10 ms) / 2 channels over the window, but below the ratio: 1.8 x (healthy
  // connections read up to 1.35 x on the GPU machine).
  StragglerFinder mild;
  feed_ring(mild, {{2, 3}}, 18'000'000, 4, 10'000'000);
  EXPECT_TRUE(mild.find(kT0 + 99 * 100 * kMs).findings.empty());
  // 3 x, but costing 100 x 2 x 0.2 ms / 2 channels = 20 ms of 9.9 s: below the loss (and nothing lost inside).
  StragglerFinder cheap;
  feed_ring(cheap, {{2, 3}}, 300'000);
  EXPECT_TRUE(cheap.find(kT0 + 99 * 100 * kMs).findings.empty());
  // Two ranks, both directions slow: nothing to compare them with.
  StragglerFinder pair;
  feed_ring(pair, {{0, 1}, {1, 0}}, 20'000'000, 2);
  EXPECT_TRUE(pair.find(kT0 + 99 * 100 * kMs).findings.empty());
  // Two ranks, one direction slow: the link.
  StragglerFinder one_way;
  feed_ring(one_way, {{1, 0}}, 20'000'000, 2);
  const auto w = one_way.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_EQ(w.findings[0].peer, 0);
}

TEST(StragglerFinder, ASlowCollectivePlacedOnALinkIsSaidThereOnce) {
  StragglerFinder j;
  const auto feed_own = [&](int from, int to, std::uint64_t own, std::uint64_t net) {
    for (int i = from; i < to; ++i)
      for (int rank = 0; rank < 4; ++rank) {
        j.add(rank, record(7, i, rank, 4, kT0 + i * 100 * kMs, own + (rank ? 100'000 : 0)));
        j.add(rank, send(7, i, rank, (rank + 1) % 4, 0, kT0 + i * 100 * kMs, rank == 2 ? net : 100'000));
      }
  };
  feed_own(0, 100, 1'000'000, 100'000);
  EXPECT_TRUE(j.find(kT0 + 9950 * kMs).findings.empty());
  feed_own(100, 200, 21'000'000, 20'000'000);
  const auto w = j.find(kT0 + 19950 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 2);
  EXPECT_EQ(w.findings[0].peer, 3);
}

// A tiny all_reduce after each big one (a flag, a loss): 256 bytes a connection in 50 us, on the tree's connections
// (r to r + 2), which the big ring does not use: ~200,000 us per MiB, latency, not bandwidth.
void feed_tiny(StragglerFinder& j, int ranks = 4) {
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < ranks; ++r)
      j.add(static_cast<std::size_t>(r),
            send(0x3f, 1000 + i, r, (r + 2) % ranks, 0, kT0 + i * 100 * kMs + 50 * kMs, 50'000, 256));
}

TEST(StragglerFinder, ATinyCollectiveBesideTheBigOnesDoesNotHideASlowLink) {
  // The job: the ring's sends 278-1588 us per MiB, the slowed link's 6163 (here 1000 and 20,000), and a
  // tiny all_reduce's connections beside them. Compared over every connection, the lower median fell on the slow link
  // itself.
  StragglerFinder j;
  feed_ring(j, {{2, 3}}, 20'000'000, 4, 1'000'000);
  feed_tiny(j);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 2);
  EXPECT_EQ(w.findings[0].peer, 3);
  EXPECT_NEAR(w.findings[0].ratio, 20, 1e-9);
  // The tiny operations are counted, not judged.
  const auto& tiny = j.connections().at({0x3f, 1, 3, true});
  EXPECT_EQ(tiny.small_ops, 100u);
  EXPECT_EQ(tiny.ops, 0u);
  // And with the tiny ones alone beside a healthy ring: nothing.
  StragglerFinder healthy;
  feed_ring(healthy, {}, 0, 4, 300'000);
  feed_tiny(healthy);
  EXPECT_TRUE(healthy.find(kT0 + 99 * 100 * kMs).findings.empty());
}

TEST(StragglerFinder, ConnectionsAreComparedSizeClassBySizeClass) {
  // Every connection sends 16 MiB at 100 us per MiB and 256 KiB at 400 us per MiB (a smaller operation takes longer
  // per byte); connection 1->2 sends mostly the small ones. Per byte over all its bytes it is 3.9x the others: a
  // healthy link that a plain comparison names. Class by class it is as fast as the rest.
  StragglerFinder j;
  feed(j, kT0, 0, 100, -1);
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < 4; ++r) {
      const int big = r == 1 ? (i % 10 == 0 ? 1 : 0) : 1, small = r == 1 ? 20 : 1;
      for (int k = 0; k < big; ++k)
        j.add(r, send(0x3f, i, r, (r + 1) % 4, 0, kT0 + i * 100 * kMs, 1'600'000, 16 << 20));
      for (int k = 0; k < small; ++k)
        j.add(r, send(0x3f, i, r, (r + 1) % 4, 1, kT0 + i * 100 * kMs, 100'000, 256 << 10));
    }
  EXPECT_TRUE(j.find(kT0 + 99 * 100 * kMs).findings.empty());
  // The same, with 1->2's small operations 10x slower: named, and its ratio weighs the classes by their bytes.
  StragglerFinder slow;
  feed(slow, kT0, 0, 100, -1);
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < (r == 1 ? 20 : 1); ++k)
        slow.add(r, send(0x3f, i, r, (r + 1) % 4, 1, kT0 + i * 100 * kMs, r == 1 ? 1'000'000 : 100'000, 256 << 10));
  const auto w = slow.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_NEAR(w.findings[0].ratio, 10, 1e-9);
}

TEST(StragglerFinder, ASlowLinkTouchingOneRankIsTheLinkWhenItsOtherConnectionsAreHealthy) {
  // 1->2 slow; 2's own sends (2->3) and 0->1 healthy, a tiny all_reduce beside: the link, not rank 1's or 2's network.
  StragglerFinder j;
  feed_ring(j, {{1, 2}}, 20'000'000);
  feed_tiny(j);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_EQ(w.findings[0].peer, 2);
}

TEST(StragglerFinder, NoFindingLosesMoreThanTheWholeTime) {
  // Collectives 100 ms apart whose waits (and network times) overlap: rank 1 late by 150 ms at each, the others'
  // kernels 150 ms; a link's sends of 300 ms on one channel; all three summed over their span exceed it.
  StragglerFinder late;
  for (int i = 0; i < 100; ++i)
    for (int rank = 0; rank < 2; ++rank)
      late.add(rank, record(5, i, rank, 2, kT0 + i * 100 * kMs, rank == 1 ? 100'000 : 150'100'000));
  const auto lw = late.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(lw.findings.size(), 1u);
  EXPECT_EQ(lw.findings[0].kind, SlowFinding::Kind::late);
  EXPECT_DOUBLE_EQ(lw.findings[0].loss, 1.0);
  for (const auto& r : lw.ranks) EXPECT_LE(r.loss, 1.0);

  StragglerFinder link;
  feed(link, kT0, 0, 100, -1);
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < 4; ++r)
      link.add(r, send(0x3f, i, r, (r + 1) % 4, 0, kT0 + i * 100 * kMs, r == 2 ? 300'000'000 : 100'000));
  const auto kw = link.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(kw.findings.size(), 1u);
  EXPECT_EQ(kw.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_DOUBLE_EQ(kw.findings[0].loss, 1.0);

  StragglerFinder inside;
  const auto feed_own = [&](int from, int to, std::uint64_t own) {
    for (int i = from; i < to; ++i)
      for (int rank = 0; rank < 2; ++rank)
        inside.add(rank, record(7, i, rank, 2, kT0 + i * 100 * kMs, own + (rank ? 10'000 : 0)));
  };
  feed_own(0, 100, 1'000'000);
  EXPECT_TRUE(inside.find(kT0 + 9950 * kMs).findings.empty());
  feed_own(100, 200, 150'000'000);
  const auto iw = inside.find(kT0 + 19950 * kMs);
  ASSERT_EQ(iw.findings.size(), 1u);
  EXPECT_EQ(iw.findings[0].kind, SlowFinding::Kind::inside);
  EXPECT_DOUBLE_EQ(iw.findings[0].loss, 1.0);
}

fabricbench::job::StragglerSettings as_the_watchdog_settles() {
  fabricbench::job::StragglerSettings s;
  s.settle_s = 5, s.settle_ops = 3;
  return s;
}

TEST(StragglerFinder, AJobsStartIsLeftOutWhileItsConnectionsAreMade) {
  // Rank 3 late by 27 ms at every collective of the first 5 s (NCCL connecting): judged at 5 s, nothing; a rank late
  // after that is named as before. Without the settling, the start names rank 3.
  StragglerFinder j(as_the_watchdog_settles());
  feed(j, kT0, 0, 50, 3);
  EXPECT_TRUE(j.find(kT0 + 4900 * kMs).findings.empty());
  EXPECT_EQ(j.settling(), 50u);
  feed(j, kT0 + 5000 * kMs, 50, 100, 1);
  const auto w = j.find(kT0 + 14900 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 1);
  StragglerFinder unsettled;
  feed(unsettled, kT0, 0, 50, 3);
  ASSERT_EQ(unsettled.find(kT0 + 4900 * kMs).findings.size(), 1u);
}

TEST(StragglerFinder, ACommunicatorMadeMidJobAndANewKindOfCollectiveSettleToo) {
  StragglerFinder j(as_the_watchdog_settles());
  feed(j, kT0, 0, 200, -1);  // communicator 0x3f, healthy for 20 s
  // At 15 s a new communicator: rank 0 late by 27 ms at its first 5 s of collectives.
  for (int i = 0; i < 50; ++i)
    for (int rank = 0; rank < 2; ++rank)
      j.add(10 + rank, record(0x77, i, rank, 2, kT0 + 15000 * kMs + i * 100 * kMs, rank == 0 ? 300'000 : 27'300'000));
  EXPECT_TRUE(j.find(kT0 + 19900 * kMs).findings.empty());
  // On 0x3f, a new kind (another algorithm) whose first 3 collectives have rank 2 late by 500 ms: left out.
  for (int i = 0; i < 3; ++i)
    for (int rank = 0; rank < 4; ++rank) {
      auto r = record(0x3f, 200 + i, rank, 4, kT0 + 20000 * kMs + i * 100 * kMs, rank == 2 ? 300'000 : 500'300'000);
      r.algo = 2;
      j.add(rank, r);
    }
  EXPECT_TRUE(j.find(kT0 + 20300 * kMs).findings.empty());
  EXPECT_EQ(j.settling(), 50u + 50u + 3u);  // 0x3f's first 5 s, 0x77's, the new kind's 3
}

}  // namespace

namespace {

TEST(StragglerFinder, CollectivesAreNumberedPerOpAsNcclDoes) {
  // NCCL's seqNumber counts each function from 0: AllGather 0, 1, ... and ReduceScatter 0, 1, ... interleaved (FSDP).
  // Matched by number alone, an AllGather's kernel was compared with a ReduceScatter's of another rank.
  StragglerFinder j;
  for (int i = 0; i < 100; ++i)
    for (int rank = 0; rank < 4; ++rank) {
      auto gather = record(0x5, i, rank, 4, kT0 + i * 100 * kMs, rank == 3 ? 300'000 : 500'000);
      gather.op = 2;
      auto scatter = record(0x5, i, rank, 4, kT0 + i * 100 * kMs + 50 * kMs, rank == 1 ? 300'000 : 27'300'000);
      scatter.op = 3;
      j.add(rank, rank % 2 ? scatter : gather);  // the files' order differs per rank
      j.add(rank, rank % 2 ? gather : scatter);
    }
  const auto w = j.find(kT0 + 9950 * kMs);
  EXPECT_EQ(j.judged(), 200u);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_EQ(w.findings[0].op, "ReduceScatter");
}

}  // namespace

namespace {

// A ring of 4 whose kernels say rank `late` arrives last by 27 ms at every collective, and whose sends say 1->2 is
// slow (`slow_ns`, 20 ms, per 1 MiB against 0.1 ms), over 10 s.
StragglerFinder kernels_and_sends(int late, fabricbench::job::StragglerSettings s = {},
                                  std::uint64_t slow_ns = 20'000'000) {
  StragglerFinder j(s);
  feed(j, kT0, 0, 100, late);
  for (int i = 0; i < 100; ++i)
    for (int r = 0; r < 4; ++r)
      j.add(r, send(0x3f, i, r, (r + 1) % 4, 0, kT0 + i * 100 * kMs, r == 1 ? slow_ns : 100'000));
  return j;
}

TEST(StragglerFinder, ALateRankTheNetworkDoesNotImplicateIsNotNamed) {
  // The kernels name rank 1, the sender of the slow link (on a time-sliced GPU, or by chance while every kernel
  // waits inside the collective): a sender's sends do not wait for its own lateness. Only the link is named.
  auto j = kernels_and_sends(1);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_EQ(w.findings[0].peer, 2);
  // Without the slow link, the same kernels name rank 1.
  StragglerFinder alone;
  feed(alone, kT0, 0, 100, 1);
  ASSERT_EQ(alone.find(kT0 + 99 * 100 * kMs).findings.size(), 1u);
}

TEST(StragglerFinder, ALateRankIsNamedWhereTheSuspectsCostFarLessThanItsWaiting) {
  // Rank 1 late by 27 ms at every collective and its own sends (1->2) twice their usual, as a stopped process's sends
  // stall with it: a suspect that implicates rank 2 but costs 0.1 ms a collective cannot explain 27 ms of waiting.
  auto j = kernels_and_sends(1, {}, 200'000);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::late);
  EXPECT_EQ(w.findings[0].rank, 1);
  EXPECT_FALSE(w.findings[0].sends_agree);
}

TEST(StragglerFinder, ALateRankTheSendsIntoWhichWaitIsNamedOnceWithBoth) {
  // Rank 2 arrives last and the sends into it (1->2) wait: one finding, the slow rank, "the sends into it wait too".
  auto j = kernels_and_sends(2);
  const auto w = j.find(kT0 + 99 * 100 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::late);
  EXPECT_EQ(w.findings[0].rank, 2);
  EXPECT_TRUE(w.findings[0].sends_agree);
}

TEST(StragglerFinder, AFindingIsNamedAtItsSecondLookAndALinkAtItsFifth) {
  fabricbench::job::StragglerSettings s;
  s.confirm_looks = 2;
  StragglerFinder late(s);
  feed(late, kT0, 0, 100, 2);
  EXPECT_TRUE(late.find(kT0 + 9800 * kMs).findings.empty());
  EXPECT_EQ(late.find(kT0 + 9900 * kMs).findings.size(), 1u);
  StragglerFinder link(s);
  feed_ring(link, {{2, 3}}, 20'000'000);
  for (int look = 0; look < 4; ++look) EXPECT_TRUE(link.find(kT0 + (9500 + look * 100) * kMs).findings.empty());
  const auto w = link.find(kT0 + 9900 * kMs);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.findings[0].kind, SlowFinding::Kind::link);
}

}  // namespace

// Ranks that take turns on one physical GPU: which one's kernel ran shortest is the order the GPU served them in, not
// a rank's lateness. A late rank on a GPU of its own is named; on one it shares with another rank of its
// communicator, it is not, and the window says which ranks share.
TEST(StragglerFinder, RanksSharingOneGpuAreNotNamedByTheirKernels) {
  const auto named = [](const std::vector<std::string>& gpus) {
    StragglerFinder j;
    for (std::size_t s = 0; s < gpus.size(); ++s) j.set_gpu(s, gpus[s]);
    feed(j, kT0, 0, 100, 2);
    return j.find(kT0 + 99 * 100 * kMs);
  };
  const auto own = named({"boot/0000:1b:00.0", "boot/0000:1c:00.0", "boot/0000:1d:00.0", "boot/0000:1e:00.0"});
  ASSERT_EQ(own.findings.size(), 1u);
  EXPECT_EQ(own.findings[0].rank, 2);
  EXPECT_TRUE(own.shared_gpu.empty());
  // The same bus id on two machines (two boot ids) is two GPUs.
  EXPECT_EQ(named({"a/0000:1b:00.0", "b/0000:1b:00.0", "c/0000:1b:00.0", "d/0000:1b:00.0"}).findings.size(), 1u);
  EXPECT_EQ(named({"", "", "", ""}).findings.size(), 1u);  // unknown: judged as before
  const auto all = named({"boot/0000:1b:00.0", "boot/0000:1b:00.0", "boot/0000:1b:00.0", "boot/0000:1b:00.0"});
  EXPECT_TRUE(all.findings.empty());
  ASSERT_EQ(all.shared_gpu.count(0x3f), 1u);
  EXPECT_EQ(all.shared_gpu.at(0x3f), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(all.ranks.front().rank, 2);  // still measured, for the report
  // Ranks 2 and 3 on one GPU, 0 and 1 on their own: rank 2 is not named; 0 and 1 would be.
  const auto two = named({"boot/0000:1b:00.0", "boot/0000:1c:00.0", "boot/0000:1d:00.0", "boot/0000:1d:00.0"});
  EXPECT_TRUE(two.findings.empty());
  EXPECT_EQ(two.shared_gpu.at(0x3f), (std::vector<int>{2, 3}));
}

// A ring whose healthy connections differ (0->1 1.4 ms per MiB, 1->2 0.8, 2->3 1.7, 3->0 0.7, steady each, as on the
// GPU machine's rig; 16 MiB every 100 ms), judged every second for 60 s; then for 10 s `after` (ms per MiB each).
// Returns the findings of each look of those 10 s.
std::vector<std::vector<SlowFinding>> ring_then(fabricbench::job::StragglerSettings settings,
                                                const std::vector<double>& after) {
  StragglerFinder j(settings);
  const std::vector<double> before{1.4, 0.8, 1.7, 0.7};
  std::vector<std::vector<SlowFinding>> looks;
  for (int i = 0; i < 700; ++i) {
    const auto t = kT0 + i * 100 * kMs;
    for (int r = 0; r < 4; ++r) {
      j.add(static_cast<std::size_t>(r), record(0x3f, i, r, 4, t, r == i % 4 ? 300'000 : 500'000));
      const double ms = (i < 600 ? before : after)[static_cast<std::size_t>(r)];
      j.add(static_cast<std::size_t>(r),
            send(0x3f, i, r, (r + 1) % 4, 0, t, static_cast<std::uint64_t>(16 * ms * 1e6), 16 << 20));
    }
    if (i % 10 == 9) {
      auto w = j.find(t + kMs);
      if (i >= 600) looks.push_back(w.findings);
    }
  }
  return looks;
}

// A host stalled: the sends into it and its own slowed 2.6x and 2.5x against their own usual, but only 2.25x and
// 1.25x against the others' (whose own differences hide it). Against its own past the sends into rank 1 are slow, its
// own beside them: rank 1's network; against the others alone, nothing.
TEST(StragglerFinder, AConnectionIsComparedWithItsOwnPastToo) {
  const std::vector<double> stalled{3.6, 2.0, 1.6, 0.75};
  const auto with = ring_then({}, stalled);
  ASSERT_FALSE(with.back().empty());
  EXPECT_EQ(with.back()[0].kind, SlowFinding::Kind::network);
  EXPECT_EQ(with.back()[0].rank, 1);
  EXPECT_EQ(with.back()[0].evidence, fabricbench::job::Evidence::sends_into);
  EXPECT_NEAR(with.back()[0].ratio, 3.6 / 1.4, 1e-6);
  fabricbench::job::StragglerSettings others_only;
  others_only.own_history_s = 0;
  for (const auto& look : ring_then(others_only, stalled)) EXPECT_TRUE(look.empty());
  // Healthy on: their differences are theirs, named never.
  for (const auto& look : ring_then({}, {1.4, 0.8, 1.7, 0.7})) EXPECT_TRUE(look.empty());
}

// Every connection 3x slower than its own usual (a congested fabric, the job's own pace): no link and no rank's network
// (the 1.7 ms connection is 2.1x the others' median, as it always was).
TEST(StragglerFinder, EveryConnectionSlowerThanItsPastIsNoLink) {
  for (const auto& look : ring_then({}, {4.2, 2.4, 5.1, 2.1}))
    for (const auto& f : look) EXPECT_TRUE(f.kind != SlowFinding::Kind::link && f.kind != SlowFinding::Kind::network);
}

TEST(SlowFindingKey, NamesWhatItsKindNamesAndNothingElse) {
  SlowFinding a, b;
  a.kind = b.kind = SlowFinding::Kind::late;
  a.comm = b.comm = 7, a.rank = b.rank = 2;
  a.op = "AllReduce", b.op = "Broadcast";  // the op a late rank was most often last at may change: one naming
  a.peer = 3;
  EXPECT_EQ(a.key(), b.key());
  b.rank = 1;
  EXPECT_NE(a.key(), b.key());
  SlowFinding c = a, d = a;
  c.kind = d.kind = SlowFinding::Kind::inside;
  c.bytes = 1 << 20, d.bytes = 2 << 20;  // a collective is its op and size
  EXPECT_NE(c.key(), d.key());
  d.bytes = c.bytes, d.rank = 5;
  EXPECT_EQ(c.key(), d.key());
  SlowFinding e = a, f = a;
  e.kind = f.kind = SlowFinding::Kind::link;
  f.peer = 4;  // a link is its two ends
  EXPECT_NE(e.key(), f.key());
  EXPECT_STREQ(e.kind_name(), "link");
  EXPECT_STREQ(c.kind_name(), "inside");
}
