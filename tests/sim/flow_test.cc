// The request flow on its own (no SystemC): the caller reports segment ends as the real
// runtime does, with measured per-stage seconds that need not match the plan's.
#include <gtest/gtest.h>

#include <vector>

#include "sim/engine/flow.h"

namespace vlasim {
namespace {

constexpr int kVision = static_cast<int>(Stage::Vision);
constexpr int kPrefix = static_cast<int>(Stage::Prefix);
constexpr int kAction = static_cast<int>(Stage::Action);

// One model in two segments on two units: [vision, prefix] then [prefix, action], as a
// partition cut inside the prefix makes them.
struct TwoSegments {
  Scenario s;
  Plan p;
  SimResult out;
  std::vector<std::pair<int, WorkItem>> started;

  TwoSegments() {
    ModelInstance mi;
    mi.name = "m";
    s.models = {mi};
    StreamDecl sd;
    sd.name = "cam";
    sd.rate_hz = 1;
    sd.duration_s = 1;
    s.streams = {sd};
    s.queue.name = "fifo";
    s.pipeline.name = "serial";
    UnitInfo a, b;
    a.name = "a";
    b.name = "b";
    p.units = {a, b};
    ModelPlan mp;
    Segment s0, s1;
    s0.unit = 0;
    s0.seconds = 2;
    s0.stage_seconds[kVision] = 1;
    s0.stage_seconds[kPrefix] = 1;
    s1.unit = 1;
    s1.seconds = 2;
    s1.stage_seconds[kPrefix] = 1;
    s1.stage_seconds[kAction] = 1;
    mp.segments = {s0, s1};
    p.models = {mp};
  }

  // Runs one request: segment 0 over [0, 2] and segment 1 over [3, 5] with the given
  // measured stage seconds (and the first `lead` seconds of each in no stage), and returns
  // its record.
  RequestRecord run(std::vector<double> m0, std::vector<double> m1, double lead = 0) {
    RequestFlow flow(s, p, out, 100, [&](int unit, const WorkItem& w) { started.push_back({unit, w}); });
    flow.arrive(0, 0.0);
    EXPECT_EQ(started.size(), 1u);
    flow.segment_done(started[0].first, started[0].second, 0, 2, m0.data(), lead);
    EXPECT_EQ(started.size(), 2u);
    flow.segment_done(started[1].first, started[1].second, 3, 5, m1.data(), lead);
    EXPECT_EQ(flow.finished(), 1u);
    return out.requests.at(0);
  }
};

TEST(RequestFlow, StagesSpanSegmentsFromFirstStartToLastEnd) {
  RequestRecord q = TwoSegments().run({1, 1, 0, 0, 0}, {0, 1, 1, 0, 0});
  for (int st : {kVision, kPrefix, kAction}) EXPECT_TRUE(q.stage_done(st)) << st;
  EXPECT_FALSE(q.stage_done(static_cast<int>(Stage::Decode)));
  EXPECT_DOUBLE_EQ(q.stage_latency[kVision], 1);  // [0, 1]
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 3);  // [1, 2] and [3, 4]
  EXPECT_DOUBLE_EQ(q.stage_latency[kAction], 1);  // [4, 5]
}

TEST(RequestFlow, StageMeasuredAtZeroInItsFirstSegmentStartsWhereThePlanPutsIt) {
  // The prefix took no measurable time in segment 0: it starts at that segment's end.
  RequestRecord q = TwoSegments().run({1, 0, 0, 0, 0}, {0, 1, 1, 0, 0});
  ASSERT_TRUE(q.stage_done(kPrefix));
  EXPECT_DOUBLE_EQ(q.stage_latency[kVision], 2);  // all of [0, 2]
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 2);  // [2, 2] and [3, 4]
}

TEST(RequestFlow, StageMeasuredAtZeroInItsLastSegmentIsStillReported) {
  RequestRecord q = TwoSegments().run({1, 1, 0, 0, 0}, {0, 0, 1, 0, 0});
  ASSERT_TRUE(q.stage_done(kPrefix));
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 2);  // [1, 2] and [3, 3]
  EXPECT_DOUBLE_EQ(q.stage_latency[kAction], 2);  // all of [3, 5]
}

TEST(RequestFlow, AllZeroMeasurementsFallBackToThePlansShares) {
  RequestRecord q = TwoSegments().run({0, 0, 0, 0, 0}, {0, 0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(q.stage_latency[kVision], 1);
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 3);
  EXPECT_DOUBLE_EQ(q.stage_latency[kAction], 1);
}

TEST(RequestFlow, ALeadBelongsToNoStageAndLeavesTheLatencyAlone) {
  // Half a second of each segment is hand-off time outside the runtime's segment interval:
  // the stages split the rest, the request still ends with its last segment.
  RequestRecord q = TwoSegments().run({1, 1, 0, 0, 0}, {0, 1, 1, 0, 0}, 0.5);
  EXPECT_DOUBLE_EQ(q.stage_latency[kVision], 0.75);  // [0.5, 1.25]
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 3);     // [1.25, 2] and [3.5, 4.25]
  EXPECT_DOUBLE_EQ(q.stage_latency[kAction], 0.75);  // [4.25, 5]
  EXPECT_DOUBLE_EQ(q.latency(), 5);
}

TEST(RequestFlow, ALeadLongerThanTheSegmentLeavesItsStagesNoTime) {
  RequestRecord q = TwoSegments().run({1, 1, 0, 0, 0}, {0, 1, 1, 0, 0}, 7);
  for (int st : {kVision, kPrefix, kAction}) EXPECT_TRUE(q.stage_done(st)) << st;
  EXPECT_DOUBLE_EQ(q.stage_latency[kVision], 0);  // [2, 2]
  EXPECT_DOUBLE_EQ(q.stage_latency[kPrefix], 3);  // [2, 2] and [5, 5]
  EXPECT_DOUBLE_EQ(q.stage_latency[kAction], 0);
}

}  // namespace
}  // namespace vlasim
