#include "scenarios/robot_decl.h"

#include <filesystem>

#include "models/card.h"

namespace vlasim {

namespace fs = std::filesystem;

RobotDecl parse_robot(const ConfigNode& n, const std::string& scenario_file) {
  if (!n.is_map()) n.fail("expected a map: {name, speed, compensate_lag, demonstrations, demo_peak_vel, params}");
  n.check_keys({"name", "speed", "compensate_lag", "demonstrations", "demo_peak_vel", "params"});
  RobotDecl r;
  r.on = true;
  r.where = n;
  const std::string name = n.get_string("name", "arm");
  const ConfigNode params = n.optional("params");
  r.spec = *robots().make(name, Params(params), n.has("name") ? n.required("name") : n);
  r.spec.speed = n.get_positive("speed", 1);
  if (r.spec.speed > 100) n.required("speed").fail("a speed factor of at most 100");
  r.compensate_lag = n.get_bool("compensate_lag", false);
  r.demo_peak_vel = n.get_positive("demo_peak_vel", 0.33);
  if (r.demo_peak_vel > 1) n.required("demo_peak_vel").fail("a fraction of the velocity limit, at most 1");
  if (n.has("demonstrations")) {
    const ConfigNode d = n.required("demonstrations");
    fs::path p(d.as_string());
    if (p.is_relative() && !scenario_file.empty()) p = fs::path(scenario_file).parent_path() / p;
    try {
      check_input_file(p.string());
    } catch (const ConfigError& e) {
      d.fail(e.what());
    }
    r.demonstrations = fs::absolute(p).string();
  }
  return r;
}

ControlDecl parse_control(const ConfigNode& c, const std::string& model, int chunk, const RobotDecl& robot) {
  if (!c.is_map()) c.fail("expected a map: {hz, execute, capture_ms, actuation_ms}");
  c.check_keys({"hz", "execute", "capture_ms", "actuation_ms"});
  ControlDecl d;
  if (robot.on) {
    for (const char* key : {"hz", "capture_ms", "actuation_ms"})
      if (c.has(key))
        c.required(key).fail(std::string("the scenario's robot gives ") + key +
                             " (its control_hz x speed, its observation delay, its motion lag); drop this key");
    d.hz = robot.spec.control_hz * robot.spec.speed;
    d.capture_s = robot.spec.observation_delay_s();
    d.actuation_s = robot.compensate_lag ? 0 : robot.spec.tau_s;
  } else {
    d.hz = c.get_positive("hz");
  }
  if (d.hz > 1e6) (c.has("hz") ? c.required("hz") : c).fail("a control rate of at most 1 MHz");
  d.execute = static_cast<int>(c.get_count("execute", 0, 1, kMaxChunk));
  if (!c.has("execute")) c.fail("needs execute: the actions of each chunk run before the next chunk is asked for");
  if (d.execute > chunk)
    c.required("execute").fail("the execution horizon (" + std::to_string(d.execute) +
                               " actions) is longer than the chunk of model '" + model + "' (" +
                               std::to_string(chunk) + " actions)");
  if (robot.on) return d;
  auto delay_s = [&](const char* key) {
    const double ms = c.get_nonneg(key, 0);
    if (ms > 1e9) c.required(key).fail("at most 1e9 ms");
    return ms * 1e-3;
  };
  d.capture_s = delay_s("capture_ms");
  d.actuation_s = delay_s("actuation_ms");
  return d;
}

void set_robot_speed(RobotDecl& robot, std::vector<StreamDecl>& streams, double speed) {
  robot.spec.speed = speed;
  for (StreamDecl& sd : streams)
    if (sd.control.on()) {
      sd.control.hz = robot.spec.control_hz * speed;
      sd.rate_hz = sd.control.hz / sd.control.execute;
    }
}

}  // namespace vlasim
