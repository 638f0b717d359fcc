// vlasim robot-speed (issue 47, SYSTEMS.md system 4's faster-than-demonstration execution): a
// scenario's robot run at a list of speed factors. At each speed the scenario is simulated
// (the control streams ask for chunks speed times as often) and, per control stream, the
// control analysis (reports/control.h) says what the delays leave of each chunk; the
// demonstrations' chunks are re-timed for that speed by the QP (scheduler/robot/retime.h).
// Each speed is then motion-bound (some chunk cannot be re-timed within the joint limits:
// the limit named), control-bound (a chunk's usable part after the delays is shorter than the
// actions run before the next chunk, or the robot ran dry), or free. The fastest speed is the
// largest one up to which every speed listed is free.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "reports/control.h"
#include "reports/plot.h"
#include "reports/sweep.h"
#include "scheduler/robot/demos.h"
#include "scheduler/robot/retime.h"
#include "sim/engine/planner.h"

namespace vlasim::cli {
namespace {

struct SpeedRow {
  double speed = 0, hz = 0;
  size_t requests = 0, unfinished = 0, dry_chunks = 0;
  double delay_p50_ms = 0, attainment = 1;
  int frozen_p50 = 0, usable_min = 0, execute = 0, chunk = 0;
  size_t chunks = 0, motion_bound = 0;  // demonstration chunks, those the QP refuses
  std::string limit;                    // the limit the first refused chunk names
  double peak_acc_ratio = 0;            // re-timed peak acceleration / limit, largest chunk
  bool short_chunks = false;
  bool control_bound() const { return short_chunks; }
  std::string bound() const {
    if (motion_bound > 0) return "motion-bound (" + limit + ")" + (control_bound() ? ", control-bound" : "");
    return control_bound() ? "control-bound" : "free";
  }
};

std::string fmt(const char* f, double v) { return printf_number(f, v); }

SpeedRow run_speed(const Scenario& base, double speed, const std::vector<Trajectory>& demos, const OutputOptions& out) {
  Scenario s = base;
  set_robot_speed(s.robot, s.streams, speed);
  const Plan plan = plan_scenario(s);
  const SimResult r = simulate(s, plan, out.sim_options());
  const ControlReport cr = make_control_report(s, r);
  SpeedRow row;
  row.speed = speed;
  row.hz = s.robot.spec.control_hz * speed;
  if (cr.streams.empty()) throw ConfigError(s.file, 0, 0, "workload", "no stream has control: the robot drives none");
  // Every control stream the robot drives: the worst of them.
  row.usable_min = INT32_MAX;
  for (const ControlStream& cs : cr.streams) {
    row.requests += cs.requests;
    row.unfinished += cs.unfinished;
    row.dry_chunks += cs.dry_chunks;
    row.delay_p50_ms = std::max(row.delay_p50_ms, cs.delay_p50 * 1e3);
    row.frozen_p50 = std::max(row.frozen_p50, cs.frozen_p50);
    if (cs.usable_min < row.usable_min) {
      row.usable_min = cs.usable_min;
      row.execute = cs.control.execute;
      row.chunk = cs.chunk;
    }
    // A chunk shorter after its delay than the actions run before the next, a robot that ran
    // dry, or a request that never finished.
    row.short_chunks |= cs.dry_chunks > 0 || cs.usable_min < cs.control.execute || cs.unfinished > 0;
  }
  size_t met = 0, with = 0;
  for (const RequestRecord& q : r.requests)
    if (s.streams[static_cast<size_t>(q.stream)].control.on() && q.deadline > 0) {
      ++with;
      met += q.met();
    }
  row.attainment = with ? static_cast<double>(met) / static_cast<double>(with) : 1;
  const JointLimits lim{s.robot.spec.vel, s.robot.spec.acc, s.robot.spec.jerk};
  row.chunks = demos.size();
  for (const Trajectory& t : demos) {
    const Retimed rt = retime(t, speed, lim);
    if (!rt.ok) {
      if (row.motion_bound++ == 0) row.limit = rt.binding;
      continue;
    }
    row.peak_acc_ratio = std::max(row.peak_acc_ratio, rt.peak_acc / lim.acc);
  }
  return row;
}

// The speed factors of --speeds in increasing order, each once; each checked as the
// scenario's own rate would be (ConfigError naming --speeds).
std::vector<double> parse_speeds(const SweepAxis& axis, const Scenario& base) {
  std::vector<double> speeds_v;
  for (const std::string& text : axis.values) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (*end || !(v > 0 && v <= 100))
      throw ConfigError("<command line>", 0, 0, "--speeds", "'" + text + "' is not a speed factor in (0, 100]");
    const double hz = base.robot.spec.control_hz * v;
    if (hz > 1e6)
      throw ConfigError("<command line>", 0, 0, "--speeds",
                        "at " + text + "x the robot runs " + fmt("%g", hz) + " actions a second: at most 1 MHz");
    for (const StreamDecl& sd : base.streams)
      if (sd.control.on() && sd.jitter_s * hz / sd.control.execute >= 0.5)
        throw ConfigError("<command line>", 0, 0, "--speeds",
                          "at " + text + "x stream " + sd.name + " asks every " + fmt("%g", sd.control.execute / hz * 1e3) +
                              " ms, less than twice its jitter: its arrivals would reorder");
    speeds_v.push_back(v);
  }
  std::sort(speeds_v.begin(), speeds_v.end());
  speeds_v.erase(std::unique(speeds_v.begin(), speeds_v.end()), speeds_v.end());
  return speeds_v;
}

// The demonstration chunks of `steps` steps at step h the robot of `base` is re-timed on: its
// recorded ones (the first `chunks`) or synthetic ones. ConfigError for a chunk too large for
// the QP or a recording whose joints are not the robot's.
std::vector<Trajectory> load_demonstrations(const Scenario& base, int steps, double h, int chunks) {
  if (static_cast<long long>(steps) * base.robot.spec.dof > kMaxRetimeCells)
    throw ConfigError(base.file, 0, 0, "robot",
                      "a chunk of " + std::to_string(steps) + " actions of " + std::to_string(base.robot.spec.dof) +
                          " joints is past the " + std::to_string(kMaxRetimeCells) +
                          " step-joints the re-timing QP takes; shorten the model's chunk or the robot's dof");
  std::vector<Trajectory> demos =
      base.robot.demonstrations.empty()
          ? synthetic_demonstration(base.robot.spec.dof, steps, h, base.robot.demo_peak_vel * base.robot.spec.vel,
                                    base.seed, chunks)
          : recorded_demonstration(base.robot.demonstrations, steps, h);
  if (demos.size() > static_cast<size_t>(chunks)) demos.resize(static_cast<size_t>(chunks));  // the first ones
  if (!demos.empty() && static_cast<int>(demos.front().q.front().size()) != base.robot.spec.dof)
    throw ConfigError(base.robot.demonstrations, 1, 0, "demonstrations",
                      std::to_string(demos.front().q.front().size()) + " joints recorded; the robot has " +
                          std::to_string(base.robot.spec.dof) + " (its dof)");
  return demos;
}

int run_robot_speed(const Common& c, const std::string& path, const std::string& speeds, const std::string& dir,
                    int chunks, bool quiet) {
  const SweepAxis axis = parse_sweep_axis("speed=" + speeds);
  Scenario base = load_for(c, path, false, quiet);
  if (!base.robot.on) throw ConfigError(base.file, 0, 0, "robot", "the scenario has no robot: give one (robot: {name: arm})");
  int model = -1;
  for (const StreamDecl& sd : base.streams)
    if (sd.control.on()) {
      model = sd.model;
      break;
    }
  if (model < 0) throw ConfigError(base.file, 0, 0, "workload", "no stream has control: the robot drives none");
  const int steps = base.models[static_cast<size_t>(model)].shape.chunk;
  const double h = 1 / base.robot.spec.control_hz;
  const std::vector<Trajectory> demos = load_demonstrations(base, steps, h, chunks);
  OutputOptions out;
  out.quiet = quiet;
  out.trace_limit = 0;
  const std::vector<double> speeds_v = parse_speeds(axis, base);
  std::vector<SpeedRow> rows;
  for (double v : speeds_v) {
    rows.push_back(run_speed(base, v, demos, out));
    if (!quiet) std::cerr << "robot-speed: " << fmt("%g", v) << "x: " << rows.back().bound() << "\n";
  }
  // What the QP buys: the demonstrations' fastest speed within the joint limits with equal
  // steps (their peak acceleration grows as the speed squared; velocity as the speed) and re-timed.
  const JointLimits lim{base.robot.spec.vel, base.robot.spec.acc, base.robot.spec.jerk};
  double equal_steps = 100, retimed = 100;
  for (const Trajectory& t : demos) {
    const Retimed at1 = retime(t, 1.0, JointLimits{1e12, 1e12, 1e12});
    double vel1 = 0;
    for (size_t k = 0; k + 1 < t.q.size(); ++k)
      for (size_t j = 0; j < t.q[k].size(); ++j) vel1 = std::max(vel1, std::fabs(t.q[k + 1][j] - t.q[k][j]) / t.h);
    double eq = 100;
    if (at1.uniform_peak_acc > 0) eq = std::min(eq, std::sqrt(lim.acc / at1.uniform_peak_acc));
    if (vel1 > 0) eq = std::min(eq, lim.vel / vel1);
    equal_steps = std::min(equal_steps, eq);
    retimed = std::min(retimed, max_speed(t, lim, 0.01, 100));
  }
  auto speed_text = [](double v) { return v <= 0.01 ? std::string("below 0.01x") : "up to " + fmt("%.2f", v) + "x"; };
  int fastest = -1;
  for (size_t i = 0; i < rows.size() && rows[i].bound() == "free"; ++i) fastest = static_cast<int>(i);
  std::ostringstream md, csv;
  md << "# Robot speed: " << base.name << " (" << base.robot.spec.name << ", "
     << (base.robot.demonstrations.empty() ? "synthetic demonstrations" : "demonstrations " + base.robot.demonstrations)
     << ", " << demos.size() << " chunks of " << steps << " steps)\n\n"
     << "| speed | actions/s | delay p50 ms | frozen p50 | usable min | executed | dry chunks | attainment | "
        "chunks motion-bound | peak acc / limit | bound |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  csv << "speed,control_hz,requests,unfinished,delay_p50_s,frozen_p50,usable_min,execute,dry_chunks,attainment,"
         "chunks,motion_bound,limit,peak_acc_ratio,bound\n";
  for (const SpeedRow& r : rows) {
    md << "| " << fmt("%g", r.speed) << " | " << fmt("%g", r.hz) << " | " << fmt("%.1f", r.delay_p50_ms) << " | "
       << r.frozen_p50 << " | " << r.usable_min << " | " << r.execute << " | " << r.dry_chunks << " | "
       << fmt("%.3f", r.attainment) << " | " << r.motion_bound << " of " << r.chunks << " | "
       << fmt("%.2f", r.peak_acc_ratio) << " | " << r.bound() << " |\n";
    csv << fmt("%.17g", r.speed) << "," << fmt("%.17g", r.hz) << "," << r.requests << "," << r.unfinished << ","
        << fmt("%.9g", r.delay_p50_ms * 1e-3) << "," << r.frozen_p50 << "," << r.usable_min << "," << r.execute << ","
        << r.dry_chunks << "," << fmt("%.6g", r.attainment) << "," << r.chunks << "," << r.motion_bound << ","
        << r.limit << "," << fmt("%.6g", r.peak_acc_ratio) << "," << r.bound() << "\n";
  }
  md << "\n"
     << (fastest < 0 ? std::string("No speed listed is free: the first is ") + rows.front().bound() + "."
                     : "Fastest speed with every chunk usable and within the joint limits: **" +
                           fmt("%g", rows[static_cast<size_t>(fastest)].speed) + "x**" +
                           (static_cast<size_t>(fastest) + 1 < rows.size()
                                ? " (next, " + fmt("%g", rows[static_cast<size_t>(fastest) + 1].speed) + "x: " +
                                      rows[static_cast<size_t>(fastest) + 1].bound() + ")."
                                : " (the last listed: try faster ones)."))
     << "\n\nThe demonstrations within the joint limits (velocity and acceleration, every chunk): "
     << speed_text(equal_steps) << " with equal steps, " << speed_text(retimed)
     << " re-timed by the QP (jerk included).\n";
  std::cout << md.str();
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    std::vector<std::string> written, warnings;
    write_into(dir, "robot_speed.md", md.str(), &written);
    write_into(dir, "robot_speed.csv", csv.str(), &written);
    if (on_path("gnuplot")) {
      std::ostringstream gp;
      gp << kSvgHeader << "set output 'robot_speed.svg'\nset datafile separator ','\nset key autotitle columnhead\n"
         << "set xlabel 'speed factor'\nset ylabel 'actions'\nset title " << gp_quote("usable chunk and bound: " + base.name)
         << "\nplot 'robot_speed.csv' using 1:7 with linespoints title 'usable (min)', "
            "'' using 1:8 with lines title 'executed per chunk', "
            "'' using 1:($12 > 0 ? $7 : 1/0) with points pt 7 ps 1.5 title 'motion-bound', "
            "'' using 1:($9 > 0 ? $7 : 1/0) with points pt 6 ps 2 title 'control-bound (ran dry)'\n";
      write_into(dir, "robot_speed.gp", gp.str(), &written);
      if (std::string e = run_gnuplot(dir + "/robot_speed.gp", dir + "/robot_speed.svg"); !e.empty()) warnings.push_back(e);
      else written.push_back(dir + "/robot_speed.svg");
    } else {
      warnings.push_back("gnuplot is not on PATH: no robot_speed.svg");
    }
    print_written(written, warnings, quiet);
  }
  return 0;
}

struct RobotSpeedArgs {
  std::string scenario, speeds = "1:4:0.25", dir;
  int chunks = 20;
  bool quiet = false;
};

}  // namespace

Command add_robot_speed(CLI::App& app) {
  auto a = std::make_shared<RobotSpeedArgs>();
  CLI::App* cmd = app.add_subcommand(
      "robot-speed", "run a scenario's robot at a list of speed factors: per speed the usable chunk after the delays, "
                     "whether the demonstrations re-time within the joint limits (a QP), and the bound");
  cmd->add_option("scenario", a->scenario, "scenario YAML file with a `robot:` and a `control:` stream")->required();
  cmd->add_option("--speeds", a->speeds, "speed factors: a list (1,2,3) or a range FROM:TO[:STEP]")->capture_default_str();
  cmd->add_option("--chunks", a->chunks, "demonstration chunks re-timed at each speed (recorded ones: the first)")
      ->check(whole_number(1, 1000))
      ->capture_default_str();
  cmd->add_option("-o,--out", a->dir, "folder for robot_speed.md, robot_speed.csv and robot_speed.svg");
  cmd->add_flag("-q,--quiet", a->quiet, "print nothing but the table and errors");
  return {cmd, [a](const Common& c) { return run_robot_speed(c, a->scenario, a->speeds, a->dir, a->chunks, a->quiet); }};
}

}  // namespace vlasim::cli
