// vlasim robot-speed (issue 47, SYSTEMS.md system 4's faster-than-demonstration execution): a
// scenario's robot run at a list of speed factors. At each speed the scenario is simulated
// (the control streams ask for chunks speed times as often) and, per control stream, the
// control analysis (reports/control.h) says what the delays leave of each chunk; the
// demonstrations' chunks are re-timed for that speed by the QP (scheduler/robot/retime.h).
// Each speed is then motion-bound (some chunk cannot be re-timed within the joint limits:
// the limit named), control-bound (a chunk's usable part after the delays is shorter than the
// actions run before the next chunk, or the robot ran dry), or free. The fastest speed is the
// largest one up to which every speed listed is free.
//
// With --measure each speed is also run for real (executors/runtime/runtime.h, the CPU
// executor) against a simulated arm ticking live at the speed's control rate
// (scheduler/robot/arm.h): predicted and measured delay, usable chunk, dry chunks and ticks and
// the bound side by side, in a table of their own and columns appended to the CSV.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "executors/executor_registry.h"
#include "executors/host.h"
#include "executors/runtime/runtime.h"
#include "executors/stop_signal.h"
#include "reports/control.h"
#include "reports/plot.h"
#include "reports/sweep.h"
#include "scenarios/config/csv.h"
#include "scheduler/robot/demos.h"
#include "scheduler/robot/retime.h"
#include "sim/engine/planner.h"

namespace vlasim::cli {
namespace {

// A speed run for real against a live arm (--measure): the worst of the control streams.
struct MeasuredRow {
  bool on = false;
  size_t requests = 0, unfinished = 0, failed = 0;
  double delay_p50_ms = 0;
  int skipped_p50 = 0, usable_min = 0;  // the live arm's: first action executed, H - the largest
  size_t dry_chunks = 0, dry_ticks = 0, ticks = 0;
  size_t model_dry_ticks = 0;           // the same arm stepped over the measured times afterwards
  double late_p50_ms = 0, late_max_ms = 0;
  bool short_chunks = false;
};

struct SpeedRow {
  double speed = 0, hz = 0;
  size_t requests = 0, unfinished = 0, dry_chunks = 0;
  double delay_p50_ms = 0, attainment = 1;
  int frozen_p50 = 0, usable_min = 0, execute = 0, chunk = 0;
  size_t chunks = 0, motion_bound = 0;  // demonstration chunks, those the QP refuses
  std::string limit;                    // the limit the first refused chunk names
  double peak_acc_ratio = 0;            // re-timed peak acceleration / limit, largest chunk
  bool short_chunks = false;
  size_t dry_ticks = 0;                 // the simulated arm's over the simulated run (all streams)
  MeasuredRow measured;
  bool control_bound() const { return short_chunks; }
  std::string bound() const { return bound_with(control_bound()); }
  std::string measured_bound() const { return bound_with(measured.short_chunks); }
  std::string bound_with(bool control) const {
    if (motion_bound > 0) return "motion-bound (" + limit + ")" + (control ? ", control-bound" : "");
    return control ? "control-bound" : "free";
  }
};

std::string fmt(const char* f, double v) { return printf_number(f, v); }

// `base` at speed factor `speed`; with `seconds` > 0 every stream lasts at most that long.
Scenario at_speed(const Scenario& base, double speed, double seconds) {
  Scenario s = base;
  set_robot_speed(s.robot, s.streams, speed);
  if (seconds > 0)
    for (StreamDecl& sd : s.streams) sd.duration_s = std::min(sd.duration_s, seconds);
  return s;
}

SpeedRow run_speed(const Scenario& base, double speed, double seconds, const std::vector<Trajectory>& demos,
                   const OutputOptions& out) {
  const Scenario s = at_speed(base, speed, seconds);
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
    row.dry_ticks += control_arm(s, r, cr, cs).dry_ticks;
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

struct RobotSpeedArgs {
  std::string scenario, speeds = "1:4:0.25", dir;
  int chunks = 20;
  bool quiet = false;
  bool measure = false;  // also run each speed for real against a live simulated arm
  std::string executor = "onednn";
  int warmup = 2;
  double seconds = 0;  // > 0: every stream lasts at most this long (simulated and measured)
};

// Refuses --measure for a scenario with a GPU this host cannot start the cuda executor on
// (ConfigError at the device): the CPU executor runs CPU core groups only.
void check_measurable(const Scenario& s, const Plan& p) {
  for (const ModelPlan& mp : p.models)
    for (const Segment& seg : mp.segments) {
      const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
      if (ui.type == DeviceType::Link) continue;
      const DeviceInstance& dev = s.devices[static_cast<size_t>(ui.device)];
      if (dev.spec.type != DeviceType::Gpu) continue;
      std::string why;
      try {
        ConfigNode n = ConfigNode::load_string("{}", "<robot-speed>");
        executor_registry().make("cuda", Params(n), n);
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty())
        throw ConfigError(s.file, dev.line, 0, "hardware.devices",
                          "device '" + dev.name + "' (" + dev.spec.name +
                              ") is a GPU: --measure runs the scenario for real, and this host cannot start the cuda "
                              "executor (" + why + "); the CPU executor runs CPU core groups only: drop --measure, or "
                              "measure a CPU scenario (scenarios/papers/realtime_robot_cpu.yaml)");
      return;
    }
}

// Runs `base` at `speed` for real against a live arm per control stream and fills row.measured
// (the worst of the streams, as run_speed does for the prediction).
void measure_speed(const Scenario& base, double speed, const RobotSpeedArgs& a, const OutputOptions& out,
                   SpeedRow& row) {
  const Scenario s = at_speed(base, speed, a.seconds);
  const Plan plan = plan_scenario(s);
  ExecuteOptions opt;
  opt.executor = a.executor;
  opt.warmup = a.warmup;
  opt.arm = true;
  opt.trace_limit = 0;
  opt.max_seconds = out.max_run_s;
  opt.should_stop = [] { return StopSignals::reason(); };
  const ExecResult er = execute(s, plan, opt);
  if (er.failed)
    throw std::runtime_error("robot-speed --measure: at " + fmt("%g", speed) + "x " + std::to_string(er.failed) +
                             " requests failed in their executor; the first: " + er.first_error);
  const ControlReport cr = make_control_report(s, er.result);
  MeasuredRow& m = row.measured;
  m.on = true;
  m.usable_min = INT32_MAX;
  for (size_t i = 0; i < cr.streams.size() && i < er.arms.size(); ++i) {
    const ControlStream& cs = cr.streams[i];
    const ArmRun& arm = er.arms[i];
    m.requests += cs.requests;
    m.unfinished += cs.unfinished;
    m.delay_p50_ms = std::max(m.delay_p50_ms, cs.delay_p50 * 1e3);
    m.skipped_p50 = std::max(m.skipped_p50, arm.skipped_p50);
    m.usable_min = std::min(m.usable_min, arm.usable_min);
    m.dry_chunks += arm.dry_chunks;
    m.dry_ticks += arm.dry_ticks;
    m.ticks += arm.ticks.size();
    m.model_dry_ticks += control_arm(s, er.result, cr, cs).dry_ticks;
    m.late_p50_ms = std::max(m.late_p50_ms, arm.late_p50_s * 1e3);
    m.late_max_ms = std::max(m.late_max_ms, arm.late_max_s * 1e3);
    m.short_chunks |= arm.dry_chunks > 0 || arm.usable_min < cs.control.execute || cs.unfinished > 0;
  }
}

// The section --measure adds to robot_speed.md: predicted / measured per speed.
std::string measured_markdown(const std::vector<SpeedRow>& rows, const RobotSpeedArgs& a) {
  std::ostringstream md;
  const HostInfo& host = host_info();
  md << "\n## Predicted / measured against a simulated arm\n\n"
     << "Measured on this host (" << host.cpu_model << ", " << host.logical_cpus << " CPUs, oneDNN ISA " << host.isa
     << "), executor " << a.executor << ": each speed run for real, a simulated arm ticking live at the speed's "
     << "control rate on a thread of its own, running the newest chunk whose inference really ended (+ actuation). "
     << "Predicted: the same arm over the simulated run. Each cell predicted / measured; the dry ticks' third "
        "figure is the arm stepped over the measured times afterwards (what the live arm's own lateness changed).\n\n"
     << "| speed | delay p50 ms | skipped p50 | usable min | dry chunks | dry ticks | tick late p50 / max ms | "
        "unfinished | bound |\n|---|---|---|---|---|---|---|---|---|\n";
  int fastest = -1;
  for (size_t i = 0; i < rows.size() && rows[i].measured_bound() == "free"; ++i) fastest = static_cast<int>(i);
  for (const SpeedRow& r : rows) {
    const MeasuredRow& m = r.measured;
    md << "| " << fmt("%g", r.speed) << " | " << fmt("%.1f", r.delay_p50_ms) << " / " << fmt("%.1f", m.delay_p50_ms)
       << " | " << r.frozen_p50 << " / " << m.skipped_p50 << " | " << r.usable_min << " / " << m.usable_min << " | "
       << r.dry_chunks << " / " << m.dry_chunks << " | " << r.dry_ticks << " / " << m.dry_ticks << " ("
       << m.model_dry_ticks << ") | " << fmt("%.2f", m.late_p50_ms) << " / " << fmt("%.2f", m.late_max_ms) << " | "
       << r.unfinished << " / " << m.unfinished << " | " << r.bound() << " / " << r.measured_bound() << " |\n";
  }
  md << "\n"
     << (fastest < 0 ? std::string("Measured: no speed listed is free.")
                     : "Measured: fastest speed with every chunk usable and within the joint limits **" +
                           fmt("%g", rows[static_cast<size_t>(fastest)].speed) + "x**.")
     << "\n";
  return md.str();
}

// The CSV: a row per speed; with --measure the measured figures before the bounds (so that
// every numeric column keeps its place) and both bounds quoted.
std::string speed_csv(const std::vector<SpeedRow>& rows, bool measure) {
  std::ostringstream csv;
  csv << "speed,control_hz,requests,unfinished,delay_p50_s,frozen_p50,usable_min,execute,dry_chunks,attainment,"
         "chunks,motion_bound,limit,peak_acc_ratio,"
      << (measure ? "predicted_dry_ticks,measured_requests,measured_unfinished,measured_delay_p50_s,"
                    "measured_skipped_p50,measured_usable_min,measured_dry_chunks,measured_dry_ticks,model_dry_ticks,"
                    "measured_ticks,tick_late_p50_s,tick_late_max_s,bound,measured_bound\n"
                  : "bound\n");
  for (const SpeedRow& r : rows) {
    csv << fmt("%.17g", r.speed) << "," << fmt("%.17g", r.hz) << "," << r.requests << "," << r.unfinished << ","
        << fmt("%.9g", r.delay_p50_ms * 1e-3) << "," << r.frozen_p50 << "," << r.usable_min << "," << r.execute << ","
        << r.dry_chunks << "," << fmt("%.6g", r.attainment) << "," << r.chunks << "," << r.motion_bound << ","
        << r.limit << "," << fmt("%.6g", r.peak_acc_ratio) << ",";
    if (!measure) {
      csv << r.bound() << "\n";
      continue;
    }
    const MeasuredRow& m = r.measured;
    csv << r.dry_ticks << "," << m.requests << "," << m.unfinished << "," << fmt("%.9g", m.delay_p50_ms * 1e-3) << ","
        << m.skipped_p50 << "," << m.usable_min << "," << m.dry_chunks << "," << m.dry_ticks << ","
        << m.model_dry_ticks << "," << m.ticks << "," << fmt("%.6g", m.late_p50_ms * 1e-3) << ","
        << fmt("%.6g", m.late_max_ms * 1e-3) << "," << csv_field(r.bound()) << "," << csv_field(r.measured_bound())
        << "\n";
  }
  return csv.str();
}

// robot_speed.md, robot_speed.csv and (gnuplot on PATH) robot_speed.svg into a.dir.
void write_speed_files(const Scenario& base, const RobotSpeedArgs& a, const std::string& md, const std::string& csv) {
  const std::string& dir = a.dir;
  std::filesystem::create_directories(dir);
  std::vector<std::string> written, warnings;
  write_into(dir, "robot_speed.md", md, &written);
  write_into(dir, "robot_speed.csv", csv, &written);
  if (on_path("gnuplot")) {
    std::ostringstream gp;
    gp << kSvgHeader << "set output 'robot_speed.svg'\nset datafile separator ','\nset key autotitle columnhead\n"
       << "set xlabel 'speed factor'\nset ylabel 'actions'\nset title " << gp_quote("usable chunk and bound: " + base.name)
       << "\nplot 'robot_speed.csv' using 1:7 with linespoints title 'usable (min)', "
          "'' using 1:8 with lines title 'executed per chunk', "
          "'' using 1:($12 > 0 ? $7 : 1/0) with points pt 7 ps 1.5 title 'motion-bound', "
          "'' using 1:($9 > 0 ? $7 : 1/0) with points pt 6 ps 2 title 'control-bound (ran dry)'"
       << (a.measure ? ", '' using 1:20 with linespoints dt 2 title 'usable (min), measured'" : "") << "\n";
    write_into(dir, "robot_speed.gp", gp.str(), &written);
    if (std::string e = run_gnuplot(dir + "/robot_speed.gp", dir + "/robot_speed.svg"); !e.empty()) warnings.push_back(e);
    else written.push_back(dir + "/robot_speed.svg");
  } else {
    warnings.push_back("gnuplot is not on PATH: no robot_speed.svg");
  }
  print_written(written, warnings, a.quiet);
}

// Per speed listed, the simulation (and with --measure the real run) and its row; stops early
// (the signal's exit status in *stopped) when SIGINT / SIGTERM ends a measured run.
std::vector<SpeedRow> run_speeds(const Scenario& base, const RobotSpeedArgs& a, const std::vector<double>& speeds,
                                 const std::vector<Trajectory>& demos, int* stopped) {
  OutputOptions out;
  out.quiet = a.quiet;
  out.trace_limit = 0;
  if (a.measure) check_measurable(base, plan_scenario(base));
  StopSignals signals;  // a measured run ends early on SIGINT / SIGTERM
  std::vector<SpeedRow> rows;
  for (double v : speeds) {
    rows.push_back(run_speed(base, v, a.seconds, demos, out));
    if (a.measure) {
      measure_speed(base, v, a, out, rows.back());
      if ((*stopped = StopSignals::exit_status())) {
        std::cerr << "robot-speed: stopped by " << StopSignals::reason() << " while measuring " << fmt("%g", v)
                  << "x; nothing written\n";
        return rows;
      }
    }
    if (!a.quiet)
      std::cerr << "robot-speed: " << fmt("%g", v) << "x: " << rows.back().bound()
                << (a.measure ? "; measured: " + rows.back().measured_bound() : "") << "\n";
  }
  return rows;
}

int run_robot_speed(const Common& c, const RobotSpeedArgs& a) {
  const bool quiet = a.quiet;
  const SweepAxis axis = parse_sweep_axis("speed=" + a.speeds);
  // The prediction is robot-speed's with or without --measure (a profile made elsewhere is not
  // refused here as `compare` refuses it: the table says what predicted it).
  Scenario base = load_for(c, a.scenario, false, quiet);
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
  const std::vector<Trajectory> demos = load_demonstrations(base, steps, h, a.chunks);
  const std::vector<double> speeds_v = parse_speeds(axis, base);
  int stopped = 0;
  const std::vector<SpeedRow> rows = run_speeds(base, a, speeds_v, demos, &stopped);
  if (stopped) return stopped;
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
  std::ostringstream md;
  md << "# Robot speed: " << base.name << " (" << base.robot.spec.name << ", "
     << (base.robot.demonstrations.empty() ? "synthetic demonstrations" : "demonstrations " + base.robot.demonstrations)
     << ", " << demos.size() << " chunks of " << steps << " steps)\n\n"
     << "| speed | actions/s | delay p50 ms | frozen p50 | usable min | executed | dry chunks | attainment | "
        "chunks motion-bound | peak acc / limit | bound |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const SpeedRow& r : rows) {
    md << "| " << fmt("%g", r.speed) << " | " << fmt("%g", r.hz) << " | " << fmt("%.1f", r.delay_p50_ms) << " | "
       << r.frozen_p50 << " | " << r.usable_min << " | " << r.execute << " | " << r.dry_chunks << " | "
       << fmt("%.3f", r.attainment) << " | " << r.motion_bound << " of " << r.chunks << " | "
       << fmt("%.2f", r.peak_acc_ratio) << " | " << r.bound() << " |\n";
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
  if (a.measure) md << measured_markdown(rows, a);
  std::cout << md.str();
  if (!a.dir.empty()) write_speed_files(base, a, md.str(), speed_csv(rows, a.measure));
  return 0;
}

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
  CLI::Option* measure = cmd->add_flag("--measure", a->measure,
                "also run each speed for real on this machine's executors against a simulated arm ticking live at the "
                "speed's control rate: predicted and measured delay, usable chunk, dry chunks and ticks, bound");
  cmd->add_option("--executor", a->executor, "with --measure: the executor of CPU core groups (`vlasim list executors`)")
      ->capture_default_str()
      ->needs(measure);
  cmd->add_option("--warmup", a->warmup, "with --measure: runs of every segment before each real run's clock starts")
      ->capture_default_str()
      ->check(whole_number(0, 1000))
      ->needs(measure);
  cmd->add_option("--seconds", a->seconds,
                  "every stream lasts at most this long, simulated and measured (default: the scenario's durations)")
      ->check(number_in(0, 3600, true));
  return {cmd, [a](const Common& c) { return run_robot_speed(c, *a); }};
}

}  // namespace vlasim::cli
