#include "reports/compare.h"
#include "reports/plot.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace vlasim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What one run says about a set of requests (one model's, or all).
struct Side {
  size_t requests = 0, met = 0;
  std::vector<double> latencies;  // finished requests
  std::vector<std::vector<double>> stage = std::vector<std::vector<double>>(kStages);
  double horizon = 1;
};

std::vector<Side> sides_by_model(const Scenario& s, const SimResult& r, const char* which, Side* overall) {
  std::vector<Side> sides(s.models.size());
  const double horizon = r.horizon > 0 ? r.horizon : 1;
  overall->horizon = horizon;
  for (auto& side : sides) side.horizon = horizon;
  for (const auto& q : r.requests) {
    if (q.model < 0 || static_cast<size_t>(q.model) >= s.models.size())
      throw std::invalid_argument(std::string("compare_runs: the ") + which + " run's request " + std::to_string(q.id) +
                                  " names model " + std::to_string(q.model) + " but the scenario has " +
                                  std::to_string(s.models.size()));
    for (Side* side : {&sides[q.model], overall}) {
      ++side->requests;
      if (q.met()) ++side->met;
      if (!q.finished()) continue;
      side->latencies.push_back(q.latency());
      for (int st = 0; st < kStages; ++st)
        if (q.stage_done(st)) side->stage[st].push_back(q.stage_latency[st]);
    }
  }
  for (auto& side : sides) std::sort(side.latencies.begin(), side.latencies.end());
  std::sort(overall->latencies.begin(), overall->latencies.end());
  return sides;
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double quantile_or_nan(const std::vector<double>& v, double q) { return v.empty() ? kNaN : percentile(v, q); }

Figure figure(double predicted, double measured) {
  Figure f;
  f.predicted = predicted;
  f.measured = measured;
  if (std::isfinite(predicted) && std::isfinite(measured) && measured != 0)
    f.error = relative_error(predicted, measured);
  return f;
}

EndToEnd end_to_end(const Side& pred, const Side& meas) {
  EndToEnd e;
  e.predicted_requests = pred.requests;
  e.measured_requests = meas.requests;
  e.predicted_finished = pred.latencies.size();
  e.measured_finished = meas.latencies.size();
  e.predicted_unfinished = pred.requests - pred.latencies.size();
  e.measured_unfinished = meas.requests - meas.latencies.size();
  e.mean_s = figure(mean_of(pred.latencies), mean_of(meas.latencies));
  e.p50_s = figure(quantile_or_nan(pred.latencies, 0.50), quantile_or_nan(meas.latencies, 0.50));
  e.p90_s = figure(quantile_or_nan(pred.latencies, 0.90), quantile_or_nan(meas.latencies, 0.90));
  e.p99_s = figure(quantile_or_nan(pred.latencies, 0.99), quantile_or_nan(meas.latencies, 0.99));
  e.throughput_hz = figure(static_cast<double>(pred.latencies.size()) / pred.horizon,
                           static_cast<double>(meas.latencies.size()) / meas.horizon);
  auto attainment = [](const Side& side) {
    return side.requests ? static_cast<double>(side.met) / static_cast<double>(side.requests) : 1.0;
  };
  e.predicted_deadline_attainment = attainment(pred);
  e.measured_deadline_attainment = attainment(meas);
  e.deadline_difference_pp = 100 * (e.predicted_deadline_attainment - e.measured_deadline_attainment);
  return e;
}

// Marks p90/p99 that rest on too little (EndToEnd::predicted_tail, measured_tail). `varied`:
// the plan gives the model's segments run-to-run variation.
void judge_tail(EndToEnd& e, bool varied, const Side& pred, const Side& meas) {
  if (!varied) {
    const bool spread = pred.latencies.size() > 1 &&
                        quantile_or_nan(pred.latencies, 0.99) > quantile_or_nan(pred.latencies, 0.50) * (1 + 1e-9);
    if (!spread && !pred.latencies.empty()) {
      e.predicted_tail = false;
      e.p90_s = figure(kNaN, e.p90_s.measured);
      e.p99_s = figure(kNaN, e.p99_s.measured);
      e.tail_notes.push_back(
          "predicted p90/p99 n/a: the cost model has no run-to-run variation for these units and every "
          "request took the same time; calibrate in context with at least 20 segment runs "
          "(vlasim calibrate SCENARIO --in-context --context-requests 100)");
    } else if (!pred.latencies.empty()) {
      e.tail_notes.push_back("predicted p90/p99 from queueing only: no run-to-run variation is calibrated for these units");
    }
  }
  if (!meas.latencies.empty() && meas.latencies.size() < 100) {
    e.measured_tail = false;
    e.tail_notes.push_back("measured p99 of " + std::to_string(meas.latencies.size()) +
                           " requests is the slowest one (nearest rank); 100 or more give a tail figure");
  }
}

// Whether plan `p` gives any compute segment of scenario model `m` (variants included)
// run-to-run variation.
bool varied(const Plan& p, int m) {
  for (const ModelPlan& mp : p.models)
    if (mp.model == m)
      for (const Segment& seg : mp.segments)
        if (!seg.transfer && !seg.variability.empty()) return true;
  return false;
}

}  // namespace

Comparison compare_runs(const Scenario& s, const Plan& p, const SimResult& predicted, const SimResult& measured,
                        const std::vector<OpTime>& ops, double margin) {
  if (!(margin > 0 && margin < 1)) throw std::invalid_argument("compare_runs: margin must be in (0, 1)");
  Comparison c;
  c.scenario = s.name;
  c.margin = margin;
  Side pred_all, meas_all;
  const std::vector<Side> pred = sides_by_model(s, predicted, "predicted", &pred_all);
  const std::vector<Side> meas = sides_by_model(s, measured, "measured", &meas_all);
  c.overall = end_to_end(pred_all, meas_all);
  bool any_varied = false;
  for (size_t m = 0; m < s.models.size(); ++m) any_varied = any_varied || varied(p, static_cast<int>(m));
  judge_tail(c.overall, any_varied, pred_all, meas_all);

  std::vector<double> all_stage_errors;
  for (size_t m = 0; m < s.models.size(); ++m) {
    ModelComparison mc;
    mc.name = s.models[m].name;
    if (m < p.models.size()) mc.predicted_alone_s = p.models[m].alone_seconds;
    mc.e2e = end_to_end(pred[m], meas[m]);
    judge_tail(mc.e2e, varied(p, static_cast<int>(m)), pred[m], meas[m]);
    std::vector<double> stage_errors;
    for (int st = 0; st < kStages; ++st) {
      const auto& ps = pred[m].stage[st];
      const auto& ms = meas[m].stage[st];
      if (ps.empty() && ms.empty()) continue;
      StageComparison sc;
      sc.stage = to_string(static_cast<Stage>(st));
      sc.predicted_count = ps.size();
      sc.measured_count = ms.size();
      sc.mean_s = figure(mean_of(ps), mean_of(ms));
      if (std::isfinite(sc.mean_s.error)) stage_errors.push_back(sc.mean_s.error);
      mc.stages.push_back(sc);
    }
    mc.median_abs_stage_error = median_abs(stage_errors);
    all_stage_errors.insert(all_stage_errors.end(), stage_errors.begin(), stage_errors.end());

    mc.predicted_latencies_s = pred[m].latencies;
    mc.measured_latencies_s = meas[m].latencies;
    if (pred[m].latencies.empty() || meas[m].latencies.empty()) {
      mc.not_tested = pred[m].latencies.empty() && meas[m].latencies.empty() ? "no finished request in either run"
                      : pred[m].latencies.empty() ? "no finished request in the predicted run"
                                                  : "no finished request in the measured run";
    } else if (!(mean_of(meas[m].latencies) > 0)) {
      mc.not_tested = "the measured mean latency is not positive";
    } else {
      mc.tested = true;
      mc.ks = ks_two_sample(pred[m].latencies, meas[m].latencies);
      mc.tost = tost_ratio(pred[m].latencies, meas[m].latencies, margin);
    }
    c.models.push_back(std::move(mc));
  }
  c.median_abs_stage_error = median_abs(all_stage_errors);

  std::map<std::string, std::vector<const OpError*>> by_kind;
  for (const auto& op : ops) {
    if (!(op.measured_s > 0) || !std::isfinite(op.measured_s) || !std::isfinite(op.predicted_s)) {
      c.ops_skipped.push_back(op);
      continue;
    }
    c.ops.push_back(OpError{op, relative_error(op.predicted_s, op.measured_s)});
  }
  if (!c.ops.empty()) {
    std::vector<double> pv, mv;
    for (const auto& e : c.ops) {
      pv.push_back(e.op.predicted_s);
      mv.push_back(e.op.measured_s);
      by_kind[e.op.kind].push_back(&e);
    }
    c.op_mape = mape(pv, mv);
    c.op_weighted_error = weighted_abs_error(pv, mv);
  }
  for (const auto& [kind, list] : by_kind) {
    KindError k;
    k.kind = kind;
    k.ops = list.size();
    std::vector<double> pv, mv;
    for (const OpError* e : list) {
      pv.push_back(e->op.predicted_s);
      mv.push_back(e->op.measured_s);
      k.predicted_s += e->op.predicted_s;
      k.measured_s += e->op.measured_s;
    }
    k.mape = mape(pv, mv);
    k.weighted_error = weighted_abs_error(pv, mv);
    k.bias = relative_error(k.predicted_s, k.measured_s);
    c.kinds.push_back(k);
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// JSON

namespace {
using nlohmann::ordered_json;

ordered_json num(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }

ordered_json to_json(const Figure& f) {
  return ordered_json{{"predicted", num(f.predicted)}, {"measured", num(f.measured)}, {"error", num(f.error)}};
}

ordered_json to_json(const EndToEnd& e) {
  ordered_json j;
  j["requests"] = ordered_json{{"predicted", e.predicted_requests}, {"measured", e.measured_requests}};
  j["finished"] = ordered_json{{"predicted", e.predicted_finished}, {"measured", e.measured_finished}};
  j["unfinished"] = ordered_json{{"predicted", e.predicted_unfinished}, {"measured", e.measured_unfinished}};
  j["latency_s"] = ordered_json{
      {"mean", to_json(e.mean_s)}, {"p50", to_json(e.p50_s)}, {"p90", to_json(e.p90_s)}, {"p99", to_json(e.p99_s)}};
  j["tail"] = ordered_json{{"predicted", e.predicted_tail}, {"measured", e.measured_tail}, {"notes", e.tail_notes}};
  j["throughput_hz"] = to_json(e.throughput_hz);
  j["deadline_attainment"] = ordered_json{{"predicted", num(e.predicted_deadline_attainment)},
                                          {"measured", num(e.measured_deadline_attainment)},
                                          {"difference_pp", num(e.deadline_difference_pp)}};
  return j;
}

ordered_json to_json(const KsResult& k) {
  return ordered_json{{"n_predicted", k.n1},     {"n_measured", k.n2}, {"d", num(k.d)},
                      {"lambda", num(k.lambda)}, {"p", num(k.p)},      {"differ_at_0.05", k.p < 0.05}};
}

ordered_json to_json(const TostResult& t) {
  return ordered_json{{"n_predicted", t.n_predicted},
                      {"n_measured", t.n_measured},
                      {"mean_predicted_s", num(t.mean_predicted)},
                      {"mean_measured_s", num(t.mean_measured)},
                      {"sd_predicted_s", num(t.sd_predicted)},
                      {"sd_measured_s", num(t.sd_measured)},
                      {"ratio", num(t.ratio)},
                      {"margin", num(t.margin)},
                      {"alpha", num(t.alpha)},
                      {"t_lower", num(t.t_lower)},
                      {"t_upper", num(t.t_upper)},
                      {"df_lower", num(t.df_lower)},
                      {"df_upper", num(t.df_upper)},
                      {"p_lower", num(t.p_lower)},
                      {"p_upper", num(t.p_upper)},
                      {"p", num(t.p)},
                      {"ci_low", num(t.ci_low)},
                      {"ci_high", num(t.ci_high)},
                      {"ci_level", num(1 - 2 * t.alpha)},
                      {"exact", t.exact},
                      {"equivalent", t.equivalent}};
}

ordered_json to_json(const OpTime& op, double error) {
  return ordered_json{{"model", op.model},
                      {"op", op.op},
                      {"kind", op.kind},
                      {"stage", op.stage},
                      {"predicted_s", num(op.predicted_s)},
                      {"measured_s", num(op.measured_s)},
                      {"error", num(error)}};
}
}  // namespace

std::string compare_json_text(const Comparison& c) {
  ordered_json j;
  j["vlasim_compare"] = 1;
  j["scenario"] = c.scenario;
  j["margin"] = c.margin;
  j["overall"] = to_json(c.overall);
  j["overall"]["median_abs_stage_error"] = num(c.median_abs_stage_error);
  j["models"] = ordered_json::array();
  for (const auto& m : c.models) {
    ordered_json mj;
    mj["name"] = m.name;
    mj["predicted_alone_s"] = num(m.predicted_alone_s);
    mj["end_to_end"] = to_json(m.e2e);
    ordered_json stages = ordered_json::array();
    for (const auto& st : m.stages)
      stages.push_back(ordered_json{{"stage", st.stage},
                                    {"predicted_count", st.predicted_count},
                                    {"measured_count", st.measured_count},
                                    {"mean_s", to_json(st.mean_s)}});
    mj["stages"] = stages;
    mj["median_abs_stage_error"] = num(m.median_abs_stage_error);
    mj["tested"] = m.tested;
    if (m.tested) {
      mj["ks"] = to_json(m.ks);
      mj["tost"] = to_json(m.tost);
    } else {
      mj["not_tested"] = m.not_tested;
    }
    j["models"].push_back(mj);
  }
  ordered_json oj;
  oj["count"] = c.ops.size();
  oj["mape"] = num(c.op_mape);
  oj["weighted_error"] = num(c.op_weighted_error);
  oj["by_kind"] = ordered_json::array();
  for (const auto& k : c.kinds)
    oj["by_kind"].push_back(ordered_json{{"kind", k.kind},
                                         {"ops", k.ops},
                                         {"predicted_s", num(k.predicted_s)},
                                         {"measured_s", num(k.measured_s)},
                                         {"mape", num(k.mape)},
                                         {"weighted_error", num(k.weighted_error)},
                                         {"bias", num(k.bias)}});
  oj["ops"] = ordered_json::array();
  for (const auto& e : c.ops) oj["ops"].push_back(to_json(e.op, e.error));
  oj["skipped"] = ordered_json::array();
  for (const auto& op : c.ops_skipped) oj["skipped"].push_back(to_json(op, kNaN));
  j["operators"] = oj;
  return j.dump(2) + "\n";
}

void write_compare_json(const Comparison& c, const std::string& path) { write_output_file(path, compare_json_text(c)); }

// ---------------------------------------------------------------------------------------
// Markdown

namespace {

std::string fmt(const char* f, double x) {
  if (!std::isfinite(x)) return std::isinf(x) ? (x > 0 ? "inf" : "-inf") : "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}
std::string ms(double s) { return std::isfinite(s) ? fmt("%.3f", s * 1e3) : "n/a"; }
std::string us(double s) { return fmt("%.2f", s * 1e6); }
std::string pct_abs(double frac) { return fmt("%.1f%%", 100 * frac); }
std::string cell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

void e2e_rows(std::ostringstream& os, const std::string& who, const EndToEnd& e) {
  const std::pair<const char*, const Figure*> lat[] = {{"mean latency (ms)", &e.mean_s},
                                                       {"p50 latency (ms)", &e.p50_s},
                                                       {"p90 latency (ms)", &e.p90_s},
                                                       {"p99 latency (ms)", &e.p99_s}};
  for (const auto& [name, f] : lat)
    os << "| " << cell(who) << " | " << name << " | " << ms(f->predicted) << " | " << ms(f->measured) << " | "
       << signed_percent(f->error) << " |\n";
  os << "| " << cell(who) << " | throughput (req/s) | " << fmt("%.3f", e.throughput_hz.predicted) << " | "
     << fmt("%.3f", e.throughput_hz.measured) << " | " << signed_percent(e.throughput_hz.error) << " |\n";
  os << "| " << cell(who) << " | deadline attainment | " << pct_abs(e.predicted_deadline_attainment) << " | "
     << pct_abs(e.measured_deadline_attainment) << " | " << fmt("%+.1f pp", e.deadline_difference_pp) << " |\n";
  os << "| " << cell(who) << " | finished / requests | " << e.predicted_finished << " / " << e.predicted_requests
     << " | " << e.measured_finished << " / " << e.measured_requests << " | |\n";
}

}  // namespace

std::string signed_percent(double frac) { return std::isfinite(frac) ? fmt("%+.1f%%", 100 * frac) : "n/a"; }

std::string compare_markdown(const Comparison& c) {
  std::ostringstream os;
  os << "# Predicted vs measured: " << c.scenario << "\n\n";
  os << "Errors are (predicted - measured) / measured: positive means the prediction is high.\n\n";

  os << "## End to end\n\n";
  os << "| model | metric | predicted | measured | error |\n|---|---|---:|---:|---:|\n";
  for (const auto& m : c.models) e2e_rows(os, m.name, m.e2e);
  if (c.models.size() > 1) e2e_rows(os, "all", c.overall);
  for (const auto& m : c.models)
    for (const auto& n : m.e2e.tail_notes) os << "\n- " << m.name << ": " << n << ".";
  if (c.models.size() > 1)
    for (const auto& n : c.overall.tail_notes) os << "\n- all: " << n << ".";
  bool notes = !c.overall.tail_notes.empty();
  for (const auto& m : c.models) notes = notes || !m.e2e.tail_notes.empty();
  if (notes) os << "\n";
  if (c.overall.predicted_unfinished || c.overall.measured_unfinished)
    os << "\nUnfinished requests (excluded from latencies, counted as missed deadlines): predicted "
       << c.overall.predicted_unfinished << ", measured " << c.overall.measured_unfinished << ".\n";

  os << "\n## Per stage\n\n";
  os << "| model | stage | requests (pred / meas) | predicted mean (ms) | measured mean (ms) | error |\n"
        "|---|---|---:|---:|---:|---:|\n";
  for (const auto& m : c.models)
    for (const auto& st : m.stages)
      os << "| " << cell(m.name) << " | " << st.stage << " | " << st.predicted_count << " / " << st.measured_count
         << " | " << ms(st.mean_s.predicted) << " | " << ms(st.mean_s.measured) << " | " << signed_percent(st.mean_s.error)
         << " |\n";
  os << '\n';
  for (const auto& m : c.models)
    os << "- " << m.name << ": median |stage error| " << pct_abs(m.median_abs_stage_error) << '\n';
  os << "- all models: median |stage error| " << pct_abs(c.median_abs_stage_error) << '\n';

  os << "\n## Operators\n\n";
  os << c.ops.size() << " operators compared: MAPE " << pct_abs(c.op_mape) << ", time-weighted error "
     << pct_abs(c.op_weighted_error) << ".\n";
  if (!c.ops_skipped.empty()) {
    os << c.ops_skipped.size() << " skipped (no positive measured time):";
    for (const auto& op : c.ops_skipped) os << ' ' << op.model << '/' << op.op;
    os << '\n';
  }
  if (!c.kinds.empty()) {
    os << "\n| kind | ops | predicted total (ms) | measured total (ms) | MAPE | time-weighted | bias |\n"
          "|---|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& k : c.kinds)
      os << "| " << cell(k.kind) << " | " << k.ops << " | " << ms(k.predicted_s) << " | " << ms(k.measured_s) << " | "
         << pct_abs(k.mape) << " | " << pct_abs(k.weighted_error) << " | " << signed_percent(k.bias) << " |\n";
  }
  if (!c.ops.empty()) {
    std::vector<const OpError*> worst;
    for (const auto& e : c.ops) worst.push_back(&e);
    std::stable_sort(worst.begin(), worst.end(),
                     [](const OpError* a, const OpError* b) { return std::fabs(a->error) > std::fabs(b->error); });
    if (worst.size() > 10) worst.resize(10);
    os << "\n### Worst " << worst.size() << " operators\n\n";
    os << "| model | op | kind | stage | predicted (us) | measured (us) | error |\n|---|---|---|---|---:|---:|---:|\n";
    for (const OpError* e : worst)
      os << "| " << cell(e->op.model) << " | " << cell(e->op.op) << " | " << cell(e->op.kind) << " | "
         << cell(e->op.stage) << " | " << us(e->op.predicted_s) << " | " << us(e->op.measured_s) << " | "
         << signed_percent(e->error) << " |\n";
  }

  os << "\n## Tests on end-to-end latency\n\n";
  os << "Kolmogorov-Smirnov: do the latency distributions differ (alpha 0.05)? TOST: is the mean latency ratio "
        "predicted / measured within 1 +- "
     << fmt("%g", c.margin) << " (alpha 0.05, 90% interval)?\n\n";
  os << "| model | KS D | KS p | KS verdict | mean ratio | 90% CI | TOST p | TOST verdict |\n"
        "|---|---:|---:|---|---:|---|---:|---|\n";
  for (const auto& m : c.models) {
    if (!m.tested) {
      os << "| " << cell(m.name) << " | | | not tested: " << m.not_tested << " | | | | |\n";
      continue;
    }
    os << "| " << cell(m.name) << " | " << fmt("%.3f", m.ks.d) << " | " << fmt("%.3g", m.ks.p) << " | "
       << (m.ks.p < 0.05 ? "distributions differ" : "no difference detected") << " | " << fmt("%.4f", m.tost.ratio)
       << " | [" << fmt("%.4f", m.tost.ci_low) << ", " << fmt("%.4f", m.tost.ci_high) << "] | " << fmt("%.3g", m.tost.p)
       << " | " << (m.tost.equivalent ? "equivalent" : "not shown equivalent")
       << (m.tost.exact ? " (exact: both constant)" : "") << " |\n";
  }
  return os.str();
}

// ---------------------------------------------------------------------------------------
// Plots

namespace {

std::string safe_name(const std::string& s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
  return out.empty() ? "model" : out;
}

std::string g(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

const char* kHeader = kSvgHeader;
const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
const int kPointTypes[] = {7, 5, 9, 11, 13, 15};

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

std::vector<std::string> write_compare_plots(const Comparison& c, const std::string& dir,
                                             std::vector<std::string>* warnings) {
  auto warn = [&](const std::string& w) {
    if (warnings)
      warnings->push_back(w);
    else
      std::cerr << "warning: " << w << '\n';
  };
  if (!on_path("gnuplot")) {
    warn("gnuplot is not on PATH: comparison plots skipped");
    return {};
  }
  std::filesystem::create_directories(dir);
  const std::filesystem::path base(dir);
  std::vector<std::pair<std::string, std::string>> jobs;  // script, svg

  // Per-operator scatter, one point set per kind, with y = x and the +-margin band.
  std::map<std::string, std::vector<const OpError*>> by_kind;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& e : c.ops)
    if (e.op.predicted_s > 0) {
      by_kind[e.op.kind].push_back(&e);
      lo = std::min({lo, e.op.predicted_s, e.op.measured_s});
      hi = std::max({hi, e.op.predicted_s, e.op.measured_s});
    }
  if (!by_kind.empty()) {
    const std::string data = (base / "ops_scatter.dat").string();
    const std::string script = (base / "ops_scatter.gp").string();
    const std::string svg = (base / "ops_scatter.svg").string();
    std::ostringstream d, gp;
    for (const auto& [kind, list] : by_kind) {
      d << "# " << kind << ": measured_s predicted_s\n";
      for (const OpError* e : list) d << g(e->op.measured_s) << ' ' << g(e->op.predicted_s) << '\n';
      d << "\n\n";
    }
    const double xlo = lo / 1.5, xhi = hi * 1.5;
    gp << kHeader << "set output " << gp_quote(file_name(svg)) << '\n'
       << "set title " << gp_quote("Per-operator time, predicted vs measured: " + c.scenario) << '\n'
       << "set logscale xy\nset format x '%.0e'\nset format y '%.0e'\n"
       << "set xlabel 'measured (s)'\nset ylabel 'predicted (s)'\n"
       << "set xrange [" << g(xlo) << ':' << g(xhi) << "]\nset yrange [" << g(xlo) << ':' << g(xhi) << "]\n"
       << "set key top left\nset grid\nset samples 400\n"
       << "plot '+' using 1:(" << g(1 - c.margin) << "*$1):(" << g(1 + c.margin) << "*$1) with filledcurves"
       << " fillcolor rgb '#c8d8f0' fillstyle solid 0.6 noborder title "
       << gp_quote("+-" + fmt("%g", 100 * c.margin) + "%")
       << ", \\\n     x with lines lc rgb 'black' dt 2 title 'y = x'";
    int index = 0;
    for (const auto& [kind, list] : by_kind) {
      gp << ", \\\n     " << gp_quote(file_name(data)) << " index " << index << " using 1:2 with points pt "
         << kPointTypes[index % std::size(kPointTypes)] << " ps 0.7 lc rgb '" << kColours[index % std::size(kColours)]
         << "' title " << gp_quote(kind);
      ++index;
    }
    gp << '\n';
    write_file(data, d.str());
    write_file(script, gp.str());
    jobs.emplace_back(script, svg);
  }

  // Latency CDFs, one plot per model with both runs.
  std::set<std::string> used;
  for (size_t m = 0; m < c.models.size(); ++m) {
    const ModelComparison& mc = c.models[m];
    if (mc.predicted_latencies_s.empty() && mc.measured_latencies_s.empty()) continue;
    std::string stem = "latency_cdf_" + safe_name(mc.name);
    if (!used.insert(stem).second) {
      stem += "_" + std::to_string(m);
      used.insert(stem);
    }
    const std::string script = (base / (stem + ".gp")).string();
    const std::string svg = (base / (stem + ".svg")).string();
    std::ostringstream gp;
    gp << kHeader << "set output " << gp_quote(file_name(svg)) << '\n'
       << "set title " << gp_quote("End-to-end latency CDF: " + mc.name) << '\n'
       << "set xlabel 'latency (ms)'\nset ylabel 'fraction of finished requests'\n"
       << "set yrange [0:1.02]\nset key bottom right\nset grid\n";
    std::vector<std::string> curves;
    const std::pair<const char*, const std::vector<double>*> runs[] = {{"predicted", &mc.predicted_latencies_s},
                                                                       {"measured", &mc.measured_latencies_s}};
    for (const auto& [label, lat] : runs) {
      if (lat->empty()) continue;
      std::vector<double> v = *lat;
      std::sort(v.begin(), v.end());
      const std::string data = (base / (stem + "_" + label + ".dat")).string();
      std::ostringstream d;
      d << "# latency_ms cumulative_fraction (" << label << ", " << v.size() << " finished)\n";
      d << g(v.front() * 1e3) << " 0\n";
      for (size_t i = 0; i < v.size(); ++i)
        d << g(v[i] * 1e3) << ' ' << g(static_cast<double>(i + 1) / static_cast<double>(v.size())) << '\n';
      write_file(data, d.str());
      const std::string title = std::string(label) + " (n=" + std::to_string(v.size()) + ")";
      curves.push_back(gp_quote(file_name(data)) + " using 1:2 with steps lw 2 lc rgb '" + kColours[curves.size()] +
                       "' title " + gp_quote(title));
    }
    gp << "plot ";
    for (size_t i = 0; i < curves.size(); ++i) gp << (i ? ", \\\n     " : "") << curves[i];
    gp << '\n';
    write_file(script, gp.str());
    jobs.emplace_back(script, svg);
  }

  std::vector<std::string> svgs;
  for (const auto& [script, svg] : jobs) {
    const std::string error = run_gnuplot(script, svg);
    if (error.empty())
      svgs.push_back(svg);
    else
      warn(error);
  }
  return svgs;
}

// ---------------------------------------------------------------------------------------
// Gate

bool within_bounds(const Comparison& c, const Bounds& b, std::string* why) {
  std::vector<std::string> failures;
  auto check = [&](const std::string& who, const char* what, double error, double bound) {
    if (std::isfinite(error) && std::fabs(error) <= bound) return;
    failures.push_back(who + ": " + what + " " + (std::isfinite(error) ? signed_percent(error) : std::string("not available")) +
                       " exceeds " + pct_abs(bound));
  };
  for (const auto& m : c.models) {
    if (m.e2e.predicted_requests == 0 && m.e2e.measured_requests == 0) continue;
    const std::string who = "model " + m.name;
    check(who, "median |stage error|", m.median_abs_stage_error, b.median_stage_error);
    check(who, "p50 latency error", m.e2e.p50_s.error, b.p50_error);
    check(who, "p99 latency error", m.e2e.p99_s.error, b.p99_error);
    if (b.require_equivalence) {
      if (!m.tested)
        failures.push_back(who + ": equivalence required but not tested (" + m.not_tested + ")");
      else if (!m.tost.equivalent)
        failures.push_back(who + ": mean latency ratio " + fmt("%.4f", m.tost.ratio) + " (90% CI [" +
                           fmt("%.4f", m.tost.ci_low) + ", " + fmt("%.4f", m.tost.ci_high) + "], TOST p " +
                           fmt("%.3g", m.tost.p) + ") not shown within 1 +- " + fmt("%g", c.margin));
    }
  }
  if (c.overall.predicted_requests || c.overall.measured_requests) {
    check("all models", "p50 latency error", c.overall.p50_s.error, b.p50_error);
    check("all models", "p99 latency error", c.overall.p99_s.error, b.p99_error);
  }
  if (why) {
    why->clear();
    for (const auto& f : failures) *why += f + '\n';
  }
  return failures.empty();
}

std::vector<OpTime> op_times(const Scenario& s, const Plan& p, const std::vector<std::vector<double>>& measured) {
  std::vector<OpTime> ops;
  for (size_t m = 0; m < s.models.size(); ++m) {
    const ModelPlan& mp = p.models[m];
    for (size_t i = 0; i < mp.graph.size(); ++i) {
      const Op& op = mp.graph.op(static_cast<int>(i));
      const OpCost& c = mp.op_costs[i];
      ops.push_back(OpTime{s.models[m].name, op.name, to_string(op.kind), to_string(op.stage),
                           c.seconds - c.dispatch_seconds, measured[m][i]});
    }
  }
  return ops;
}

}  // namespace vlasim
