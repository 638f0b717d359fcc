#include "reports/drift.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "reports/report.h"

namespace vlasim {

namespace {

void scale_segment(Segment& s, double f) {
  s.seconds *= f;
  s.overhead *= f;
  s.outside *= f;
  for (double& x : s.stage_seconds) x *= f;
}

struct Tails {
  double mean = 0, p50 = 0, p99 = 0;
};

Tails tails(const SimResult& r) {
  std::vector<double> v;
  for (const RequestRecord& q : r.requests)
    if (q.end >= 0 && !q.failed && !q.dropped) v.push_back(q.end - q.arrival);
  const LatencyStats st = latency_stats(v);
  return {st.mean, st.p50, st.p99};
}

double elasticity(double minus, double plus, double base, double step) {
  return base > 0 ? (plus - minus) / base / (2 * step) : 0;
}

nlohmann::json num(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json sentinel_json(const SentinelRecord& r) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& [t, s] : r.samples) samples.push_back(nlohmann::json::array({t, s}));
  return {{"samples", samples},
          {"median_s", r.median_s()},
          {"drift", r.drift()},
          {"max_deviation", r.max_deviation()},
          {"others_cpu", r.others_cpu >= 0 ? num(r.others_cpu) : nlohmann::json(nullptr)},
          {"steal", r.steal >= 0 ? num(r.steal) : nlohmann::json(nullptr)}};
}

}  // namespace

Plan scale_service(const Plan& p, double factor) {
  if (!(factor > 0)) throw std::invalid_argument("scale_service: factor must be > 0");
  Plan out = p;
  for (ModelPlan& m : out.models) {
    for (Segment& s : m.segments) scale_segment(s, factor);
    for (BatchVariant& b : m.batched)
      for (Segment& s : b.segments) scale_segment(s, factor);
    for (auto& [key, s] : m.split) scale_segment(s, factor);
    m.alone_seconds *= factor;
  }
  return out;
}

ServiceSensitivity service_sensitivity(const Scenario& s, const Plan& p, const SimOptions& o, const SimResult& base,
                                       double step) {
  if (!(step > 0 && step < 0.5)) throw std::invalid_argument("service_sensitivity: step must be in (0, 0.5)");
  ServiceSensitivity r;
  r.step = step;
  SimOptions quiet = o;
  quiet.trace_limit = 0;
  quiet.on_record = nullptr;
  const Tails b = tails(base);
  const Tails lo = tails(simulate(s, scale_service(p, 1 - step), quiet));
  const Tails hi = tails(simulate(s, scale_service(p, 1 + step), quiet));
  r.p50_base = b.p50, r.p50_minus = lo.p50, r.p50_plus = hi.p50;
  r.p99_base = b.p99, r.p99_minus = lo.p99, r.p99_plus = hi.p99;
  r.mean_base = b.mean, r.mean_minus = lo.mean, r.mean_plus = hi.mean;
  r.mean_elasticity = elasticity(lo.mean, hi.mean, b.mean, step);
  r.p50_elasticity = elasticity(lo.p50, hi.p50, b.p50, step);
  r.p99_elasticity = elasticity(lo.p99, hi.p99, b.p99, step);
  for (const UnitStats& u : base.units)
    if (base.end_time > 0) r.utilisation = std::max(r.utilisation, u.busy_seconds / base.end_time);
  return r;
}

std::vector<CorunRow> corun_slowdowns(const Scenario& s, const Plan& p) {
  std::vector<CorunRow> rows;
  for (size_t pm = 0; pm < p.models.size(); ++pm)
    for (size_t k = 0; k < p.models[pm].segments.size(); ++k) {
      const ModelPlan& mp = p.models[pm];
      const Segment& seg = mp.segments[k];
      if (seg.transfer || seg.unit < 0 || static_cast<size_t>(seg.unit) >= p.units.size()) continue;
      const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
      if (ui.type != DeviceType::Cpu || ui.device < 0) continue;
      CorunRow r;
      r.unit = seg.unit;
      r.unit_name = ui.name;
      r.segment = s.models[static_cast<size_t>(mp.model)].name + " " + seg.label;
      if (std::any_of(rows.begin(), rows.end(), [&](const CorunRow& o) { return o.unit == r.unit && o.segment == r.segment; }))
        continue;
      r.alone_s = seg.seconds;
      r.memory_frac = seg.memory_frac;
      r.slowdown = corun_slowdown(s, p, static_cast<int>(pm), static_cast<int>(k), &r.measured);
      rows.push_back(r);
    }
  return rows;
}

std::string corun_markdown(const std::vector<CorunRow>& rows) {
  if (rows.empty()) return "";
  std::string md =
      "\nThe engine's slowdown of each CPU segment while every other core of its node is busy: measured, the "
      "host entry's co-run slowdown of that segment beside these co-runners (calibrate --in-context); else "
      "memory share of its time x alone/loaded bandwidth; 1 without a loaded bandwidth, where only the node's "
      "bandwidth is shared:\n\n| unit | segment | alone (ms) | memory share | slowdown | from |\n"
      "|---|---|---:|---:|---:|---|\n";
  char b[320];
  for (const CorunRow& r : rows) {
    std::snprintf(b, sizeof b, "| %s | %s | %.3f | %.2f | x%.3f | %s |\n", r.unit_name.c_str(), r.segment.c_str(),
                  1e3 * r.alone_s, r.memory_frac, r.slowdown, r.measured ? "measured" : "bandwidth");
    md += b;
  }
  return md;
}

double speed_change(const DriftInputs& d) {
  if (d.measurement.empty() || d.calibration.empty()) return 0;
  return d.measurement.idle_s() / d.calibration.idle_s() - 1;
}

bool drift_marked(const DriftInputs& d) {
  return std::abs(d.measurement.drift()) > kDriftTarget || std::abs(speed_change(d)) > kDriftTarget ||
         d.measurement.disturbed();
}

std::string drift_markdown(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens) {
  std::string md = "\n## Machine drift and sensitivity\n\n";
  char b[512];
  if (d.measurement.empty()) {
    md += "Drift sentinel: not taken.\n";
  } else {
    std::snprintf(b, sizeof b,
                  "Drift sentinel (a fixed 96^3 fp32 matrix product, plain C++, timed every 2 s): %.3f ms median over "
                  "%zu samples during the measurement (they share the cores with it: not a speed), drift %s from "
                  "its start to its end (largest deviation %.1f%%); ",
                  1e3 * d.measurement.median_s(), d.measurement.samples.size(), signed_percent(d.measurement.drift()).c_str(),
                  100 * d.measurement.max_deviation());
    md += b;
    if (d.measurement.others_cpu >= 0) {
      std::snprintf(b, sizeof b,
                    "other processes used %.1f%% of the machine's CPU time during it and the hypervisor stole %.1f%%; ",
                    100 * d.measurement.others_cpu, 100 * d.measurement.steal);
      md += b;
    }
    if (d.calibration.empty())
      md += "the profile records no sentinel of its calibration, so the speed change since then is unknown.\n";
    else {
      std::snprintf(b, sizeof b,
                    "%.3f ms before and after it against %.3f ms before and after the calibration (drift %s "
                    "there): the machine is %s %s than when calibrated.\n",
                    1e3 * d.measurement.idle_s(), 1e3 * d.calibration.idle_s(), signed_percent(d.calibration.drift()).c_str(),
                    signed_percent(std::abs(speed_change(d))).substr(1).c_str(), speed_change(d) >= 0 ? "slower" : "faster");
      md += b;
    }
  }
  if (drift_marked(d)) {
    std::snprintf(b, sizeof b,
                  "\n**Marked: the machine's own speed moved by more than %.0f%%** (drift or speed change since "
                  "calibration), **or other processes or the hypervisor took more than %.0f%% of its CPU time**: the "
                  "errors below are partly the machine's, not the model's; do not count this run towards the targets.\n",
                  100 * kDriftTarget, 100 * kLoadTarget);
    md += b;
  }
  std::snprintf(b, sizeof b,
                "\nSensitivity to the service time (re-simulated with every segment's time x(1 -+ %.0f%%), same seed; "
                "not an M/G/1 formula): busiest unit %.0f%% busy; d(mean)/mean = %.2f, d(p50)/p50 = %.2f and "
                "d(p99)/p99 = %.2f x d(service)/service.%s\n\n",
                100 * sens.step, 100 * sens.utilisation, sens.mean_elasticity, sens.p50_elasticity, sens.p99_elasticity,
                sens.p50_elasticity > 3 ? " Near saturation: a service-time error of a few percent (calibration noise, "
                                          "the machine's drift) becomes several times that in latency, whatever the model."
                                        : "");
  md += b;
  const double sc = speed_change(d);
  md += "| figure | error | speed change since calibration | error that speed change alone explains |\n|---|---:|---:|---:|\n";
  const struct {
    const char* name;
    const Figure& f;
    double el;
  } rows[] = {{"mean latency", c.overall.mean_s, sens.mean_elasticity},
              {"p50 latency", c.overall.p50_s, sens.p50_elasticity},
              {"p99 latency", c.overall.p99_s, sens.p99_elasticity}};
  for (const auto& r : rows) {
    const bool known = !d.calibration.empty() && !d.measurement.empty();
    // A slower machine (sc > 0) makes measured latency longer: the prediction reads low.
    const double explained = known ? -(r.el * sc) / (1 + r.el * sc) : NAN;
    md += std::string("| ") + r.name + " | " + signed_percent(r.f.error) + " | " + (known ? signed_percent(sc) : "n/a") + " | " +
          signed_percent(explained) + " |\n";
  }
  return md;
}

std::string drift_json_text(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens,
                            const std::vector<CorunRow>& corun) {
  nlohmann::json j;
  nlohmann::json cr = nlohmann::json::array();
  for (const CorunRow& r : corun)
    cr.push_back({{"unit", r.unit}, {"unit_name", r.unit_name}, {"segment", r.segment}, {"alone_s", r.alone_s},
                  {"memory_frac", r.memory_frac}, {"slowdown", r.slowdown}, {"measured", r.measured}});
  j["corun"] = cr;
  j["measurement"] = sentinel_json(d.measurement);
  j["calibration"] = sentinel_json(d.calibration);
  j["speed_change"] = (d.measurement.empty() || d.calibration.empty()) ? nlohmann::json(nullptr) : num(speed_change(d));
  j["target"] = kDriftTarget;
  j["marked"] = drift_marked(d);
  j["sensitivity"] = {{"step", sens.step},
                      {"utilisation", sens.utilisation},
                      {"mean_base_s", sens.mean_base},
                      {"mean_minus_s", sens.mean_minus},
                      {"mean_plus_s", sens.mean_plus},
                      {"mean_elasticity", sens.mean_elasticity},
                      {"p50_base_s", sens.p50_base},
                      {"p50_minus_s", sens.p50_minus},
                      {"p50_plus_s", sens.p50_plus},
                      {"p99_base_s", sens.p99_base},
                      {"p99_minus_s", sens.p99_minus},
                      {"p99_plus_s", sens.p99_plus},
                      {"p50_elasticity", sens.p50_elasticity},
                      {"p99_elasticity", sens.p99_elasticity},
                      {"method", "re-simulation, every service time x (1 +- step), same seed"}};
  j["errors"] = {{"mean", num(c.overall.mean_s.error)}, {"p50", num(c.overall.p50_s.error)}, {"p99", num(c.overall.p99_s.error)}};
  return j.dump(1) + "\n";
}

void write_drift_json(const Comparison& c, const DriftInputs& d, const ServiceSensitivity& sens,
                      const std::vector<CorunRow>& corun, const std::string& path) {
  write_output_file(path, drift_json_text(c, d, sens, corun));
}

}  // namespace vlasim
