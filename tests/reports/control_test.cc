// Control analysis (reports/control.h): delays, frozen prefix, usable part, running dry and
// the control-bounded rate from hand-made request records.
#include <gtest/gtest.h>

#include <cmath>

#include "models/builder.h"
#include "reports/control.h"
#include "sim/engine/planner.h"
#include "sim/hardware/hardware.h"

namespace vlasim {
namespace {

// One pi0_tiny stream (chunk 10) on a robot at 50 actions/s asking every 5 actions (10 Hz),
// observations 20 ms old, actions 10 ms after the inference ends.
Scenario robot_scenario(const std::string& control) {
  const std::string text =
      "name: rtc\nhardware:\n  devices: [{name: gpu0, catalog: rtx4090}]\n"
      "models:\n  - {card: pi0_tiny, chunk: 10}\n"
      "workload:\n  - {name: arm, model: pi0_tiny, duration_s: 1, control: " + control + "}\n";
  return load_scenario_text(text, "rtc.yaml", default_catalog_dir(), default_cards_dir());
}

RequestRecord record(uint64_t id, double arrival, double latency) {
  RequestRecord q;
  q.id = id;
  q.arrival = arrival;
  q.start = arrival;
  q.end = latency < 0 ? -1 : arrival + latency;
  q.stages_done = 1 << static_cast<int>(Stage::Action);
  q.stage_latency[static_cast<int>(Stage::Action)] = latency;
  return q;
}

TEST(ControlReport, SplitsTheDelayAndFreezesThePrefixItAte) {
  const Scenario s = robot_scenario("{hz: 50, execute: 5, capture_ms: 20, actuation_ms: 10}");
  ASSERT_DOUBLE_EQ(s.streams[0].rate_hz, 10);  // hz / execute
  SimResult r;
  r.requests = {record(0, 0.0, 0.050), record(1, 0.1, 0.050), record(2, 0.2, 0.050)};
  r.end_time = r.horizon = 0.3;
  const ControlReport c = make_control_report(s, r);
  ASSERT_EQ(c.streams.size(), 1u);
  ASSERT_EQ(c.rows.size(), 3u);
  const ControlRow& a = c.rows[0];
  EXPECT_NEAR(a.delay_s, 0.080, 1e-12);  // 20 capture + 50 run + 10 actuation
  EXPECT_NEAR(a.stage_s[static_cast<int>(Stage::Action)], 0.050, 1e-12);
  EXPECT_EQ(a.frozen, 4);                // 80 ms at 50 Hz: 4 actions already due
  EXPECT_EQ(a.usable, 6);
  EXPECT_EQ(a.dry_s, 0);                 // the next chunk acts at 0.18 s, before 0.18 s + ... runs out
  const ControlStream& cs = c.streams[0];
  EXPECT_EQ(cs.dry_chunks, 0u);
  // Chunk i lasts 10 actions = 0.2 s from its observation; the next acts 0.18 s after it.
  EXPECT_NEAR(cs.bound_hz, 10 / 0.18, 1e-9);
  EXPECT_NE(control_markdown(c).find("| 3 | 0 |"), std::string::npos) << control_markdown(c);
}

TEST(ControlReport, ALateChunkLetsTheRobotRunDry) {
  const Scenario s = robot_scenario("{hz: 50, execute: 5, capture_ms: 20, actuation_ms: 10}");
  SimResult r;
  // The second inference takes 250 ms: chunk 0 (observed at -0.02 s, 0.2 s long) runs out at
  // 0.18 s, chunk 1 acts at 0.1 + 0.25 + 0.01 = 0.36 s.
  r.requests = {record(0, 0.0, 0.050), record(1, 0.1, 0.250), record(2, 0.2, -1)};
  r.end_time = r.horizon = 0.5;
  const ControlReport c = make_control_report(s, r);
  EXPECT_NEAR(c.rows[0].dry_s, 0.18, 1e-12);
  EXPECT_EQ(c.rows[1].frozen, 10);       // 280 ms of delay eats the whole chunk
  EXPECT_EQ(c.rows[1].usable, 0);
  EXPECT_FALSE(c.rows[2].finished);
  const ControlStream& cs = c.streams[0];
  EXPECT_EQ(cs.unfinished, 1u);
  EXPECT_GE(cs.dry_chunks, 1u);
  EXPECT_LT(cs.bound_hz, 50);            // these delays do not bound the robot's rate
  const std::string csv = control_csv(c);
  EXPECT_NE(csv.find("request,stream,finished,observed_s"), std::string::npos);
  EXPECT_NE(csv.find("\n2,arm,0,"), std::string::npos) << csv;
}

// The simulated arm (scheduler/robot/arm.h) over stream `cs` agrees with the analysis: each
// chunk it ran started at the analysis's frozen count, it ran dry after exactly the chunks the
// analysis counts dry, for ceil(dry time x hz) ticks each. Returns the dry chunks.
size_t expect_arm_agrees(const Scenario& s, const SimResult& r, const ControlReport& c, const ControlStream& cs) {
  const ArmRun arm = control_arm(s, r, c, cs);
  size_t row = 0, finished = 0, dry_ticks = 0;
  for (const ControlRow& q : c.rows) {
    if (q.stream != cs.stream) continue;
    const ArmChunk& a = arm.chunks.at(row++);
    if (!q.finished) continue;
    ++finished;
    if (a.first_action >= 0) {
      EXPECT_EQ(a.first_action, q.frozen) << "request " << q.request;
      EXPECT_EQ(cs.chunk - a.first_action, q.usable) << "request " << q.request;
    }
    EXPECT_EQ(a.dry_ticks > 0, q.dry_s > 0) << "request " << q.request << ": dry " << q.dry_s << " s";
    dry_ticks += static_cast<size_t>(std::ceil(q.dry_s * cs.control.hz - 1e-6));
  }
  EXPECT_EQ(row, arm.chunks.size());
  EXPECT_EQ(arm.ran, finished);  // a request every `execute` actions: no chunk is replaced before it acts
  EXPECT_EQ(arm.dry_chunks, cs.dry_chunks);
  EXPECT_EQ(arm.dry_ticks, dry_ticks);
  EXPECT_EQ(arm.usable_min, cs.usable_min);
  return arm.dry_chunks;
}

TEST(ControlArm, AgreesWithTheAnalysisOnHandMadeRecords) {
  const Scenario s = robot_scenario("{hz: 50, execute: 5, capture_ms: 20, actuation_ms: 10}");
  SimResult r;
  r.requests = {record(0, 0.0, 0.050), record(1, 0.1, 0.150), record(2, 0.2, 0.120), record(3, 0.3, -1)};
  r.end_time = r.horizon = 0.6;
  const ControlReport c = make_control_report(s, r);
  // Chunk 0 (observed -0.02 s) out at 0.18, chunk 1 acts at 0.26: 4 dry ticks; chunk 1 (9 of
  // 10 passed) out at 0.28, chunk 2 acts at 0.33: 3; chunk 2 out at 0.38 and request 3 never
  // ends: dry to the end (0.6 s), 11.
  EXPECT_EQ(expect_arm_agrees(s, r, c, c.streams[0]), 3u);
  EXPECT_EQ(control_arm(s, r, c, c.streams[0]).dry_ticks, 4u + 3u + 11u);
  EXPECT_EQ(control_arm(s, r, c, c.streams[0]).usable_min, 1);
}

// On simulated runs of the RTX 4090 robot (no jitter: observations on the tick grid), at a
// speed where no chunk runs dry and at two where every one does.
TEST(ControlArm, AgreesWithTheAnalysisOnASimulatedRun) {
  Scenario base = load_scenario(std::string(VLASIM_SOURCE_DIR) + "/scenarios/systems/realtime_pi0_robot_4090.yaml",
                                default_catalog_dir(), default_cards_dir());
  size_t dry = 0;
  for (double speed : {1.0, 2.0, 2.5}) {
    Scenario s = base;
    set_robot_speed(s.robot, s.streams, speed);
    for (StreamDecl& sd : s.streams) {
      sd.jitter_s = 0;
      sd.duration_s = 10;
    }
    const SimResult r = simulate(s, plan_scenario(s));
    const ControlReport c = make_control_report(s, r);
    ASSERT_EQ(c.streams.size(), 1u);
    const size_t d = expect_arm_agrees(s, r, c, c.streams[0]);
    if (speed == 1.0) EXPECT_EQ(d, 0u);
    dry += d;
  }
  EXPECT_GT(dry, 10u);  // the dry side was exercised
}

TEST(ControlReport, BadControlIsNamedAtItsKey) {
  auto error = [](const std::string& control) {
    try {
      robot_scenario(control);
    } catch (const ConfigError& e) {
      return e.key() + ": " + e.what();
    }
    return std::string("accepted");
  };
  EXPECT_NE(error("{hz: 50, execute: 11}").find("longer than the chunk"), std::string::npos);
  EXPECT_NE(error("{hz: 50, execute: 11}").find("control.execute"), std::string::npos);
  EXPECT_NE(error("{hz: -5, execute: 2}").find("control.hz"), std::string::npos);
  EXPECT_NE(error("{hz: 50}").find("needs execute"), std::string::npos);
  EXPECT_NE(error("{hz: 50, execute: 2, lag_ms: 3}").find("lag_ms"), std::string::npos);
  EXPECT_NE(error("{hz: 50, execute: 2, capture_ms: -1}").find("capture_ms"), std::string::npos);
}

}  // namespace
}  // namespace vlasim
