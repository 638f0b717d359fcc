// The robot part and the QP that re-times a chunk (scheduler/robot; issue 47): the lag model
// against its closed form, the QP against hand-solved cases, infeasible speeds refused naming
// the limit that binds, bad robot parameters refused at their key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "scenarios/scenario.h"
#include "scheduler/robot/arm.h"
#include "scheduler/robot/demos.h"
#include "scheduler/robot/retime.h"
#include "scheduler/robot/robot.h"

namespace vlasim {
namespace {

TEST(Robot, TheLagFollowsItsClosedFormForAStep) {
  // q[k+1] = a q[k] + (1 - a) y: from q0 towards a constant target y, q[k] = y + (q0 - y) a^k.
  const double a = std::exp(-0.02 / 0.15), q0 = 0.3, y = 1.2;
  const std::vector<double> q = lag_response(q0, std::vector<double>(40, y), a);
  ASSERT_EQ(q.size(), 41u);
  for (size_t k = 0; k < q.size(); ++k) EXPECT_NEAR(q[k], y + (q0 - y) * std::pow(a, double(k)), 1e-12) << k;
  RobotSpec r;
  r.tau_s = 0.15;
  EXPECT_DOUBLE_EQ(r.lag_pole(0.02), a);
  r.tau_s = 0;
  EXPECT_DOUBLE_EQ(r.lag_pole(0.02), 0.0);  // no lag: the arm is where it was sent
}

TEST(Robot, PreAmplifiedTargetsMakeTheLaggedArmReachEachWaypointOnePeriodLater) {
  const double a = 0.8;
  const std::vector<double> want = {0.1, 0.25, 0.5, 0.6, 0.6, 0.4};
  const std::vector<double> q = lag_response(0.0, lag_compensated(0.0, want, a), a);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(q[k + 1], want[k], 1e-12);
  // Sent the waypoints themselves, the arm lags behind them.
  const std::vector<double> raw = lag_response(0.0, want, a);
  EXPECT_LT(raw[3], want[2] - 0.1);
}

TEST(Robot, TheArmsDefaultsAndParametersAndBadOnesRefusedAtTheirKey) {
  const auto arm = robots().make("arm", Params(), ConfigNode());
  EXPECT_NEAR(arm->observation_delay_s(), 0.055 + 0.033 + 0.050, 1e-12);
  EXPECT_NEAR(arm->tau_s, 0.150, 1e-12);
  EXPECT_EQ(arm->dof, 7);
  EXPECT_NEAR(arm->period_s(), 0.02, 1e-12);
  const ConfigNode fast = ConfigNode::load_string("{control_hz: 30}", "robot.yaml");
  auto r30 = robots().make("arm", Params(fast), fast);
  r30->speed = 2.5;  // the scenario's robot.speed
  EXPECT_NEAR(r30->period_s(), 1 / 75.0, 1e-12);
  // (speed is the scenario's robot.speed, not a parameter of the robot: refused there too.)
  for (const char* bad : {"{tau_ms: -1}", "{speed: 2}", "{vel: 0}", "{dof: 2.5}", "{control_hz: nan}", "{jerk: fast}"}) {
    const ConfigNode n = ConfigNode::load_string(bad, "robot.yaml");
    try {
      robots().make("arm", Params(n), n);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      const std::string key = std::string(bad).substr(1, std::string(bad).find(':') - 1);
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("robot.yaml:1"), std::string::npos) << e.what();
    }
  }
  const ConfigNode unknown = ConfigNode::load_string("{wrist_ms: 3}", "robot.yaml");
  EXPECT_THROW(robots().make("arm", Params(unknown), unknown), ConfigError);
}

Trajectory one_joint(std::vector<double> q, double h = 0.02) {
  Trajectory t;
  t.h = h;
  for (double v : q) t.q.push_back({v});
  return t;
}

TEST(Retime, EvenlySpacedWaypointsKeepEqualStepsAtEverySpeed) {
  const Trajectory t = one_joint({0, 0.01, 0.02, 0.03, 0.04, 0.05});
  const JointLimits lim{10, 1000, 1e6};
  for (double s : {1.0, 2.0, 3.0}) {
    const Retimed r = retime(t, s, lim);
    ASSERT_TRUE(r.ok) << r.why;
    for (double dt : r.dt) EXPECT_NEAR(dt, 0.02 / s, 1e-7);
    EXPECT_NEAR(r.duration_s, 5 * 0.02 / s, 1e-6);
    EXPECT_NEAR(r.peak_vel, 0.5 * s, 1e-5);
    EXPECT_NEAR(r.peak_acc, 0, 1e-4);
  }
}

TEST(Retime, UnevenStepsAreSpreadSoTheAccelerationPeakVanishesInTheSameTime) {
  // Steps of 1, 2, 1 (x 0.01 rad) at equal times: velocity 0.5, 1, 0.5 rad/s, peak acceleration
  // 0.5 / 0.02 x 1/0.02 = 25 rad/s^2. Hand-solved: u = c (1, 1/2, 1) with the chunk's time kept
  // (1/c + 2/c + 1/c = 3 h, c = 4 / (3 h)) gives equal velocities (0.04 rad in 0.06 s: 0.667
  // rad/s) and no acceleration at all.
  const Trajectory t = one_joint({0, 0.01, 0.03, 0.04});
  const Retimed r = retime(t, 1.0, JointLimits{10, 1000, 1e6});
  ASSERT_TRUE(r.ok) << r.why;
  EXPECT_NEAR(r.uniform_peak_acc, 25, 1e-9);
  EXPECT_NEAR(r.peak_acc, 0, 1e-3);
  const double c = 4 / (3 * 0.02);
  EXPECT_NEAR(1 / r.dt[0], c, 1e-3 * c);
  EXPECT_NEAR(1 / r.dt[1], c / 2, 1e-3 * c);
  EXPECT_NEAR(1 / r.dt[2], c, 1e-3 * c);
  EXPECT_NEAR(r.duration_s, 0.06, 1e-8);  // as the demonstration: the speed is kept
  EXPECT_NEAR(r.peak_vel, 0.04 / 0.06, 1e-4);
  // Twice as fast: half the time.
  EXPECT_NEAR(retime(t, 2.0, JointLimits{10, 1000, 1e6}).duration_s, 0.03, 1e-8);
}

TEST(Retime, ASpeedPastALimitIsRefusedNamingTheLimitThatBinds) {
  const Trajectory t = one_joint({0, 0.01, 0.03, 0.04});  // mean velocity 0.667 rad/s at speed 1
  // Velocity: at speed 4 the mean velocity is 2.67 rad/s, over a 2 rad/s limit whatever the timing.
  Retimed v = retime(t, 4.0, JointLimits{2, 1000, 1e6});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.binding, "vel");
  EXPECT_NE(v.why.find("velocity limit 2"), std::string::npos) << v.why;
  // Acceleration: a chunk that reverses (0 -> 1 -> 0) cannot avoid accelerating; the least peak
  // over timings grows as s^2, so a low limit refuses speed 2.
  const Trajectory back = one_joint({0, 0.02, 0.04, 0.02, 0});
  const Retimed at1 = retime(back, 1.0, JointLimits{100, 1e4, 1e9});
  ASSERT_TRUE(at1.ok);
  Retimed a = retime(back, 2.0, JointLimits{100, at1.peak_acc * 2, 1e9});
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.binding, "acc");
  // Jerk: a chunk that reverses twice must change its acceleration; at a speed the
  // acceleration limit allows, a low jerk limit refuses it.
  const Trajectory twice = one_joint({0, 0.02, 0.04, 0.02, 0, 0.02, 0.04});
  ASSERT_TRUE(retime(twice, 1.0, JointLimits{100, 1e4, 1e9}).ok);
  Retimed j = retime(twice, 1.0, JointLimits{100, 1e4, 1e-3});
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.binding, "jerk");
  // The fastest speed: feasible there, refused 1% above.
  const JointLimits lim{2, 1000, 1e6};
  const double s = max_speed(t, lim);
  EXPECT_TRUE(retime(t, s, lim).ok);
  EXPECT_FALSE(retime(t, s * 1.01, lim).ok);
  // Hand-solved: the spread timing runs every step at the mean velocity, 0.667 s rad/s (above),
  // so 2 rad/s allows s = 3.
  EXPECT_NEAR(s, 3.0, 0.01);
  // A step that would need more than ten mean steps to keep the velocity limit is named.
  const Retimed jump = retime(one_joint({0, 1, 1, 1, 1, 1}), 1.0, JointLimits{2, 1000, 1e6});
  EXPECT_FALSE(jump.ok);
  EXPECT_EQ(jump.binding, "vel");
  EXPECT_NE(jump.why.find("step 0"), std::string::npos) << jump.why;
}

TEST(Retime, AMalformedChunkIsRefused) {
  Trajectory t = one_joint({0, 1});
  t.q[1].push_back(2);  // a joint more
  EXPECT_THROW(retime(t, 1, JointLimits{1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(retime(one_joint({0}), 1, JointLimits{1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(retime(one_joint({0, 1}), 0, JointLimits{1, 1, 1}), std::invalid_argument);
  Trajectory huge;  // past the QP's size bound: refused, not solved for hours
  huge.h = 0.02;
  huge.q.assign(static_cast<size_t>(kMaxRetimeCells / 7 + 2), std::vector<double>(7, 0.0));
  EXPECT_THROW(retime(huge, 1, JointLimits{1, 1, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace vlasim

namespace vlasim {
namespace {

TEST(Demonstrations, SyntheticChunksAreSmoothSeededAndAtTheirPeakVelocity) {
  const auto a = synthetic_demonstration(7, 50, 0.02, 0.7, 4, 10), b = synthetic_demonstration(7, 50, 0.02, 0.7, 4, 10);
  ASSERT_EQ(a.size(), 10u);
  double peak = 0;
  for (size_t c = 0; c < a.size(); ++c) {
    ASSERT_EQ(a[c].q.size(), 51u);
    EXPECT_EQ(a[c].q, b[c].q);  // the same seed, the same chunks
    if (c + 1 < a.size()) {
      EXPECT_EQ(a[c].q.back(), a[c + 1].q.front());  // consecutive
    }
    for (size_t k = 0; k + 1 < a[c].q.size(); ++k)
      for (size_t j = 0; j < 7; ++j) peak = std::max(peak, std::fabs(a[c].q[k + 1][j] - a[c].q[k][j]) / 0.02);
  }
  EXPECT_NEAR(peak, 0.7, 1e-9);
  EXPECT_NE(synthetic_demonstration(7, 50, 0.02, 0.7, 5, 10)[0].q, a[0].q);
}

TEST(Demonstrations, RecordedChunksAreCutFromTheCsvAndABadRowIsNamed) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vlasim_demo_test_" + std::to_string(::getpid()) + ".csv")).string();
  {
    std::ofstream f(path);
    f << "j0,j1\n";
    for (int k = 0; k <= 10; ++k) f << 0.1 * k << "," << -0.1 * k << "\n";
  }
  const auto chunks = recorded_demonstration(path, 5, 0.02);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_DOUBLE_EQ(chunks[1].q.front()[0], 0.5);
  EXPECT_DOUBLE_EQ(chunks[1].q.back()[1], -1.0);
  {
    std::ofstream f(path);
    f << "j0,j1\n0,0\n0.1,oops\n";
  }
  try {
    recorded_demonstration(path, 1, 0.02);
    ADD_FAILURE() << "a bad row was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(":3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("oops"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path);
    f << "j0\n0\n";
  }
  EXPECT_THROW(recorded_demonstration(path, 5, 0.02), ConfigError);  // shorter than a chunk
  {
    std::ofstream f(path);
    f << "j0,j1\n0,1,\n";
  }
  EXPECT_THROW(recorded_demonstration(path, 1, 0.02), ConfigError);  // a row ending with a comma
  {
    std::ofstream f(path);
    f << "j0\n0\n1e308\n";
  }
  EXPECT_THROW(recorded_demonstration(path, 1, 0.02), ConfigError);  // no joint is 1e308 rad
  std::filesystem::remove(path);
}

// A control stream driven by a robot (scenarios/robot_decl.h) on the RTC scenario's model.
std::string robot_scenario(const std::string& robot, const std::string& control) {
  return "name: r\nhardware:\n  devices:\n    - {name: gpu0, catalog: rtx4090, graph_capture: true}\n"
         "models:\n  - {name: pi0, card: pi0, views: 2, prompt: 0, chunk: 50, steps: 10, placement: [{stages: [vision, prefix, action], device: gpu0}]}\n" +
         robot + "workload:\n  - {name: arm, model: pi0, duration_s: 2, control: " + control + "}\n";
}

TEST(RobotScenario, ControlStreamsTakeTheRobotsRateAndDelays) {
  const Scenario s = load_scenario_text(robot_scenario("robot: {name: arm, speed: 2}\n", "{execute: 25}"), "<test>",
                                        default_catalog_dir(), default_cards_dir());
  ASSERT_TRUE(s.robot.on);
  const ControlDecl& c = s.streams[0].control;
  EXPECT_DOUBLE_EQ(c.hz, 100);  // 50 actions a second, twice as fast
  EXPECT_DOUBLE_EQ(s.streams[0].rate_hz, 4);
  EXPECT_NEAR(c.capture_s, 0.138, 1e-12);
  EXPECT_NEAR(c.actuation_s, 0.150, 1e-12);
  const Scenario comp = load_scenario_text(
      robot_scenario("robot: {name: arm, compensate_lag: true, params: {control_hz: 30}}\n", "{execute: 10}"), "<test>",
      default_catalog_dir(), default_cards_dir());
  EXPECT_DOUBLE_EQ(comp.streams[0].control.hz, 30);
  EXPECT_DOUBLE_EQ(comp.streams[0].control.actuation_s, 0);
  Scenario moved = s;
  set_robot_speed(moved.robot, moved.streams, 3);
  EXPECT_DOUBLE_EQ(moved.streams[0].rate_hz, 6);
}

TEST(RobotScenario, BadRobotsAndControlKeysTheRobotGivesAreRefusedAtTheirKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"robot: {name: crane}\n", "crane"},
      {"robot: {name: arm, speed: 0}\n", "speed"},
      {"robot: {name: arm, speed: 200}\n", "speed"},
      {"robot: {name: arm, params: {tau_ms: -5}}\n", "tau_ms"},
      {"robot: {name: arm, wheels: 4}\n", "wheels"},
      {"robot: {name: arm, demonstrations: /nonexistent/demo.csv}\n", "demonstrations"},
      {"robot: [arm]\n", "robot"},
  };
  for (const auto& [robot, key] : cases) {
    try {
      load_scenario_text(robot_scenario(robot, "{execute: 25}"), "<test>", default_catalog_dir(), default_cards_dir());
      ADD_FAILURE() << robot << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("<test>:7"), std::string::npos) << e.what();
    }
  }
  try {
    load_scenario_text(robot_scenario("robot: {name: arm}\n", "{hz: 50, execute: 25}"), "<test>", default_catalog_dir(),
                       default_cards_dir());
    ADD_FAILURE() << "control.hz beside a robot was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("robot gives hz"), std::string::npos) << e.what();
  }
}

// Chunk i of r took effect at action `first`, executed `executed` actions and ran dry for `dry` ticks.
void expect_chunk(const ArmRun& r, size_t i, int first, int executed, int dry) {
  ASSERT_LT(i, r.chunks.size());
  EXPECT_EQ(r.chunks[i].first_action, first) << "chunk " << i;
  EXPECT_EQ(r.chunks[i].executed, executed) << "chunk " << i;
  EXPECT_EQ(r.chunks[i].dry_ticks, dry) << "chunk " << i;
}

// The simulated arm (scheduler/robot/arm.h), hand-worked: H = 10 actions at 50 actions/s (a
// tick every 20 ms), a request every 5 ticks.
TEST(Arm, ALateChunkGivesExactlyTheDryTicksItOwes) {
  // Observations at -0.02, 0.08, 0.18 s (tick 0 at -0.02 s). Chunk 0 acts at 0.04 (60 ms: 3
  // actions passed), runs its actions 3..9 at 0.04 .. 0.16 and is out at 0.18; chunk 1 acts
  // only at 0.24, so the arm holds at 0.18, 0.20, 0.22 (3 dry ticks), then runs chunk 1's
  // actions 8, 9 (8 passed in its 160 ms); chunk 2 acts at 0.30, so 0.28 is dry; chunk 2 runs
  // 6..9 and the arm is done (nothing more asked for).
  const ArmRun r = run_arm(10, 50, -0.02, {{-0.02, 0.04}, {0.08, 0.24}, {0.18, 0.30}}, 1e9);
  ASSERT_EQ(r.chunks.size(), 3u);
  EXPECT_EQ(r.waiting_ticks, 2u);  // 0.00 and 0.02: nothing in effect yet
  expect_chunk(r, 0, 3, 7, 3);
  expect_chunk(r, 1, 8, 2, 1);
  expect_chunk(r, 2, 6, 4, 0);
  EXPECT_EQ(r.dry_ticks, 4u);
  EXPECT_EQ(r.dry_chunks, 2u);
  EXPECT_EQ(r.executed, 13u);
  EXPECT_EQ(r.usable_min, 2);   // chunk 1: 10 - 8
  EXPECT_EQ(r.skipped_p50, 6);  // of 3, 6, 8
  EXPECT_EQ(r.idle_ticks, 1u);  // 0.38: chunk 2 out, nothing asked for: done
  ASSERT_EQ(r.ticks.size(), 2u + 13u + 4u + 1u);
  EXPECT_EQ(r.ticks[2].chunk, 0);
  EXPECT_EQ(r.ticks[2].action, 3);
  EXPECT_TRUE(r.ticks[9].dry);
  EXPECT_EQ(r.ticks[9].action, -1);
}

TEST(Arm, ANewerChunkReplacesTheOldOneMidWaySkippingItsPassedActions) {
  // Observations at 0 and 0.1 s; chunk 0 acts at 0.02 (1 action passed), chunk 1 at 0.14 (2
  // passed). Chunk 0 runs actions 1..6 (its 7..9 never run); chunk 1 runs from action 2.
  const ArmRun r = run_arm(10, 50, 0, {{0, 0.02}, {0.1, 0.14}}, 1e9);
  expect_chunk(r, 0, 1, 6, 0);
  expect_chunk(r, 1, 2, 8, 0);
  EXPECT_EQ(r.dry_ticks, 0u);
  EXPECT_EQ(r.ran, 2u);
  // A chunk whose delay passes its length runs nothing: the arm stays dry on the old one.
  const ArmRun late = run_arm(10, 50, 0, {{0, 0.02}, {0.1, 0.32}, {0.2, 0.26}}, 1e9);
  expect_chunk(late, 0, 1, 9, 3);   // dry at 0.20, 0.22, 0.24
  expect_chunk(late, 1, -1, 0, 0);  // chunk 2 (ready at 0.26) is newer and in effect first
  expect_chunk(late, 2, 3, 7, 0);
}

TEST(Arm, AnUnfinishedRequestLeavesTheArmDryToTheEnd) {
  // Chunk 0 out at 0.2 s; request 1 (observed at 0.1) never finishes: dry from 0.20 to 0.48.
  const ArmRun r = run_arm(10, 50, 0, {{0, 0.02}, {0.1, -1}}, 0.5);
  EXPECT_EQ(r.chunks[0].executed, 9);
  EXPECT_EQ(r.dry_ticks, 15u);
  EXPECT_EQ(r.dry_chunks, 1u);
}

TEST(Arm, ALiveArmToldOfChunksAsTheyArriveDoesWhatTheSimulatedOneDoes) {
  const std::vector<ArmRequest> q = {{-0.02, 0.04}, {0.08, 0.24}, {0.18, 0.30}};
  const ArmRun sim = run_arm(10, 50, -0.02, q, 1e9);
  Arm live(10, 50, -0.02, {-0.02, 0.08, 0.18});
  size_t told = 0;
  for (long k = live.first_tick_at(0); !live.done(); ++k) {
    // Each chunk is told of at the first tick at or after its inference ended (here: ready).
    for (; told < q.size() && q[told].ready_s <= live.tick_time(k) + 1e-12; ++told) live.ready(told, q[told].ready_s);
    live.tick(k, 0.001 * static_cast<double>(k % 3));
  }
  const ArmRun r = live.result();
  EXPECT_EQ(r.dry_ticks, sim.dry_ticks);
  EXPECT_EQ(r.executed, sim.executed);
  EXPECT_EQ(r.ticks.size(), sim.ticks.size());
  EXPECT_DOUBLE_EQ(r.late_max_s, 0.002);
  EXPECT_DOUBLE_EQ(r.late_p50_s, 0.001);
  EXPECT_THROW(Arm(0, 50, 0, {}), std::invalid_argument);
}

}  // namespace
}  // namespace vlasim
