#include "reports/validate_papers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "reports/report.h"
#include "reports/sweep.h"
#include "sim/engine/engine.h"
#include "sim/engine/plan.h"
#include "sim/costs/shaped_cost_model.h"
#include "sim/costs/stack_model.h"
#include "scenarios/config/csv.h"
#include "sim/engine/planner.h"

namespace vlasim {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMetrics = {"per_frame_ms", "alone_ms", "busy_ms", "capacity"};

FigureEval parse_eval(const ConfigNode& n, const std::string& dir) {
  FigureEval e;
  e.where = n;
  if (!n.is_map()) n.fail("expected a map: scenario, metric (and set, arg, sweep, slo)");
  n.check_keys({"scenario", "set", "metric", "arg", "sweep", "slo"});
  const ConfigNode sc = n.required("scenario");
  e.scenario = (fs::path(dir) / sc.as_string()).lexically_normal().string();
  if (!fs::is_regular_file(e.scenario)) sc.fail("no scenario file '" + e.scenario + "'");
  if (n.has("set")) {
    const ConfigNode set = n.required("set");
    if (!set.is_map()) set.fail("expected a map of dotted scenario keys to values");
    for (const auto& [k, v] : set.entries()) e.set.emplace_back(k, YAML::Clone(v.raw()));
  }
  const ConfigNode m = n.required("metric");
  e.metric = m.as_string();
  if (std::find(kMetrics.begin(), kMetrics.end(), e.metric) == kMetrics.end())
    m.fail("unknown metric '" + e.metric + "'; valid names are: " + join_names(kMetrics));
  e.arg = n.get_string("arg", "");
  if (e.metric == "busy_ms" && e.arg.empty()) n.required("arg").fail("busy_ms needs the device's name");
  if (e.metric == "capacity") {
    const ConfigNode sw = n.required("sweep");
    e.sweep = sw.as_string();
    try {
      parse_sweep_axis(e.sweep);
    } catch (const ConfigError& err) {
      sw.fail(std::string("not KEY=SPEC: ") + err.what());
    }
    e.slo = n.required("slo").as_double();
    if (!(e.slo > 0 && e.slo <= 1)) n.required("slo").fail("must be in (0, 1]");
  }
  return e;
}

std::vector<double> grid(const ConfigNode& n, const char* key, double lo, double hi) {
  const ConfigNode g = n.required(key);
  std::vector<double> v = g.as_doubles();
  if (v.empty()) g.fail("the fit's grid needs at least one value");
  for (double x : v)
    if (!(x >= lo && x <= hi)) g.fail("values must be from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

std::string fmt(double v, int prec = 4) {
  char b[40];
  std::snprintf(b, sizeof b, "%.*g", prec, v);
  return b;
}

std::string pct(double e) {
  char b[40];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * e);
  return b;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A point of the fit's grid (index into host_op_us x eff_scale), or -1: the scenarios' own
// cost model.
struct Evaluator {
  const FigureTable& t;
  const std::string& catalog;
  const std::string& cards;
  std::map<std::pair<const FigureEval*, int>, double> memo;

  std::function<void(Scenario&)> adjust(int point) const {
    if (point < 0) return {};
    const double host = t.host_op_us[point / t.eff_scale.size()];
    const double scale = t.eff_scale[point % t.eff_scale.size()];
    return [host, scale, model = t.model, stack = t.stack](Scenario& s) {
      const ConfigNode n = ConfigNode::load_string(
          "host_op_us: " + fmt(host, 17) + "\neff_scale: " + fmt(scale, 17), "validate-papers");
      s.cost_model = PolicyDecl{model, Params(n), n};
      if (stack != "none") {
        const ConfigNode none;
        s.stack = PolicyDecl{stack, Params(none), ConfigNode::load_string("stack: " + stack, "validate-papers")};
      }
    };
  }

  double run(const FigureEval& e, int point) {
    auto key = std::make_pair(&e, point);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    double v = 0;
    if (e.metric == "capacity") {
      SweepSpec spec;
      spec.path = e.scenario;
      spec.catalog_dir = catalog;
      spec.cards_dir = cards;
      spec.axis = parse_sweep_axis(e.sweep);
      spec.capacity_slo = e.slo;
      for (const auto& [k, val] : e.set) spec.fixed.emplace_back(k, YAML::Dump(val));
      spec.adjust = adjust(point);
      const SweepResult r = run_sweep(spec, {});
      if (r.best < 0) e.where.fail("no load of the sweep meets the SLO");
      char* end = nullptr;
      v = std::strtod(r.rows[r.best].value.c_str(), &end);
      if (*end) e.where.required("sweep").fail("the swept values are not numbers ('" + r.rows[r.best].value + "')");
    } else {
      ConfigNode root = ConfigNode::load_file(e.scenario);
      for (const auto& [k, val] : e.set) scenario_key(root.raw(), k, e.scenario) = YAML::Clone(val);
      Scenario s = load_scenario_node(root, catalog, cards);
      resolve_auto_dtypes(s, DType::F32);
      if (auto a = adjust(point)) a(s);
      Plan plan = plan_scenario(s);
      resolve_stream_loads(s, plan);
      const SimResult r = simulate(s, plan, SimOptions{});
      const Report rep = make_report(s, plan, r, "simulate");
      if (e.metric == "alone_ms") {
        v = rep.models.at(0).predicted_alone_s * 1e3;
      } else {
        if (!(rep.throughput_hz > 0)) e.where.fail("the scenario finished no request");
        v = 1e3 / rep.throughput_hz;
        if (e.metric == "busy_ms") {
          auto d = std::find_if(rep.devices.begin(), rep.devices.end(),
                                [&](const DeviceMetrics& m) { return m.name == e.arg; });
          if (d == rep.devices.end()) e.where.required("arg").fail("no device '" + e.arg + "' in the scenario");
          v *= d->busy;
        }
      }
    }
    memo[key] = v;
    return v;
  }

  // The figure's value; throws ConfigError at the figure when it is not a positive number
  // (a zero time or a zero denominator: its error would have no size).
  double value(const PaperFigure& f, int point) {
    const double n = run(f.num, point);
    const double v = f.has_den ? n / run(f.den, point) : n;
    if (!(std::isfinite(v) && v > 0)) f.where.fail("the simulator gives " + fmt(v) + " for this figure, not a positive number");
    return v;
  }
};

double log_err(double pred, double pub) { return std::log(pred / pub); }

}  // namespace

FigureTable load_figure_table(const std::string& path) {
  FigureTable t;
  t.file = path;
  const ConfigNode root = ConfigNode::load_file(path);
  if (!root.is_map()) root.fail("expected a map with fit and figures");
  root.check_keys({"fit", "figures", "stack"});
  if (root.has("stack")) t.stack = check_stack_name(root.required("stack").as_string(), root.required("stack"));
  const std::string dir = fs::path(path).parent_path().string();
  const ConfigNode fit = root.required("fit");
  fit.check_keys({"host_op_us", "eff_scale", "prior"});
  t.host_op_us = grid(fit, "host_op_us", 0, 10000);
  t.eff_scale = grid(fit, "eff_scale", 0.06, 4);
  if (fit.has("prior")) {
    const ConfigNode pr = fit.required("prior");
    pr.check_keys({"host_op_us", "eff_scale"});
    t.prior_host_op_us = pr.get_nonneg("host_op_us", t.prior_host_op_us);
    t.prior_eff_scale = pr.get_positive("eff_scale", t.prior_eff_scale);
  }
  std::set<std::string> ids;
  for (const ConfigNode& f : root.required("figures").items()) {
    PaperFigure p;
    p.where = f;
    f.check_keys({"id", "paper", "what", "source", "unit", "published", "eval", "divide_by", "fit",
                  "not_evaluated"});
    p.id = f.required("id").as_string();
    if (!ids.insert(p.id).second) f.required("id").fail("figure '" + p.id + "' is in the table twice");
    p.paper = f.required("paper").as_string();
    p.what = f.required("what").as_string();
    p.source = f.required("source").as_string();
    p.unit = f.get_string("unit", "");
    p.published = f.get_positive("published");
    p.fit = f.get_bool("fit", false);
    if (f.has("not_evaluated")) {
      p.not_evaluated = f.required("not_evaluated").as_string();
      if (f.has("eval")) f.required("eval").fail("a figure is evaluated or says why not, not both");
      if (p.fit) f.required("fit").fail("a figure that is not evaluated cannot be in the fit set");
    } else {
      p.evaluated = true;
      p.num = parse_eval(f.required("eval"), dir);
      if (f.has("divide_by")) {
        p.has_den = true;
        p.den = parse_eval(f.required("divide_by"), dir);
      }
      if (p.fit && (p.num.metric == "capacity" || (p.has_den && p.den.metric == "capacity")))
        f.required("fit").fail("capacity figures are too slow for the fit's grid; leave them out of the fit set");
    }
    t.figures.push_back(std::move(p));
  }
  if (t.figures.empty()) root.required("figures").fail("no figures");
  return t;
}

Validation validate_papers(const FigureTable& table, const std::string& catalog_dir,
                           const std::string& cards_dir, const std::function<void(double)>& progress) {
  // The grid: under a stack host_op_us does not count (the stack prices host time), so only
  // its prior is run. The figures stay `table`'s (rows point at them).
  FigureTable t{table.file, {}, table.host_op_us, table.eff_scale, table.prior_host_op_us, table.prior_eff_scale,
                table.model, table.stack};
  if (t.stack != "none") t.host_op_us = {t.prior_host_op_us};
  Evaluator ev{t, catalog_dir, cards_dir, {}};
  const int points = static_cast<int>(t.host_op_us.size() * t.eff_scale.size());
  std::vector<const PaperFigure*> fit, shown;
  std::vector<std::string> papers;
  for (const PaperFigure& f : table.figures) {
    if (f.fit) fit.push_back(&f);
    if (f.evaluated && std::find(papers.begin(), papers.end(), f.paper) == papers.end()) papers.push_back(f.paper);
  }
  // Work: every fit figure at every point, then every evaluated figure three times at most.
  size_t evaluated = 0;
  for (const PaperFigure& f : table.figures) evaluated += f.evaluated;
  const double total = double(fit.size()) * points + 3.0 * evaluated;
  double done = 0;
  auto tick = [&] {
    ++done;
    if (progress) progress(std::min(1.0, done / std::max(1.0, total)));
  };
  // Squared log errors of the fit figures at every point.
  std::vector<std::vector<double>> sq(fit.size(), std::vector<double>(points));
  for (size_t i = 0; i < fit.size(); ++i)
    for (int p = 0; p < points; ++p) {
      sq[i][p] = std::pow(log_err(ev.value(*fit[i], p), fit[i]->published), 2);
      tick();
    }
  // The best point fitted without `paper` ("" keeps every fit figure); among points that fit
  // equally well (a parameter the figures cannot tell apart), the one nearest the prior.
  auto prior_distance = [&](int p) {
    const double h = t.host_op_us[p / t.eff_scale.size()], e = t.eff_scale[p % t.eff_scale.size()];
    return std::abs(h - t.prior_host_op_us) / std::max(1.0, t.prior_host_op_us) +
           std::abs(e - t.prior_eff_scale);
  };
  auto best_point = [&](const std::string& paper) {
    int best = -1;
    double best_sum = 0;
    for (int p = 0; p < points; ++p) {
      double sum = 0;
      int n = 0;
      for (size_t i = 0; i < fit.size(); ++i)
        if (fit[i]->paper != paper) sum += sq[i][p], ++n;
      if (n == 0) continue;
      if (best < 0) {
        best = p, best_sum = sum;
        continue;
      }
      const bool tie = std::abs(sum - best_sum) <= 1e-9 * std::max(1.0, best_sum);
      if (tie ? prior_distance(p) < prior_distance(best) : sum < best_sum) {
        best = p;
        best_sum = std::min(sum, best_sum);
      }
    }
    return best;
  };
  auto describe = [&](int p) {
    if (p < 0) return std::string("defaults (no fit figure outside this paper)");
    return "host_op_us " + fmt(t.host_op_us[p / t.eff_scale.size()]) + ", eff_scale " +
           fmt(t.eff_scale[p % t.eff_scale.size()]);
  };
  Validation v;
  const int all = best_point("\x01");  // a paper no figure has: every fit figure
  if (all >= 0) {
    v.host_op_us = t.host_op_us[all / t.eff_scale.size()];
    v.eff_scale = t.eff_scale[all % t.eff_scale.size()];
  } else {  // no fit figure: the registry's defaults
    v.host_op_us = ShapedParams{}.host_op_s * 1e6;
    v.eff_scale = ShapedParams{}.eff_scale;
  }
  // Without any fit figure the shaped model runs at its registry defaults.
  auto shaped = [&](const PaperFigure& f, int p) {
    if (p >= 0) return ev.value(f, p);
    FigureTable defaults{t.file, {}, {ShapedParams{}.host_op_s * 1e6}, {ShapedParams{}.eff_scale}};
    defaults.stack = t.stack;
    Evaluator e1{defaults, catalog_dir, cards_dir, {}};
    return e1.value(f, 0);
  };
  std::vector<double> out_err, in_err, roof_err;
  for (const PaperFigure& f : table.figures) {
    FigureRow r;
    r.fig = &f;
    if (f.evaluated) {
      r.roofline = ev.value(f, -1);
      roof_err.push_back(std::abs(r.roofline / f.published - 1));
      tick();
      const int fold = best_point(f.paper);
      r.fold = describe(fold);
      try {
        r.in_sample = shaped(f, all);
        tick();
        r.out_sample = shaped(f, fold);
        tick();
      } catch (const ConfigError& e) {
        if (t.stack == "none") throw;
        r.failed = e.what();
        ++v.failed;
        v.rows.push_back(std::move(r));
        continue;
      }
      out_err.push_back(std::abs(r.out_sample / f.published - 1));
      if (f.fit) in_err.push_back(std::abs(r.in_sample / f.published - 1));
    }
    v.rows.push_back(std::move(r));
  }
  v.evaluated = out_err.size();
  v.out_median = median(out_err);
  v.out_worst = out_err.empty() ? 0 : *std::max_element(out_err.begin(), out_err.end());
  v.in_median = median(in_err);
  v.in_worst = in_err.empty() ? 0 : *std::max_element(in_err.begin(), in_err.end());
  v.roofline_median = median(roof_err);
  if (progress) progress(1.0);
  return v;
}

std::string validation_markdown(const FigureTable& t, const Validation& v) {
  std::ostringstream o;
  const std::string name = t.model == "shaped" ? "Shaped" : t.model == "kernel" ? "Kernel" : t.model;
  o << "Figures: " << t.file << ". " << name << " model fitted on the fit set (" << "host_op_us "
    << fmt(v.host_op_us) << ", eff_scale " << fmt(v.eff_scale)
    << "); out of sample: each paper's figures predicted with the parameters fitted on the other "
       "papers' fit figures (leave one paper out). Roofline: the scenario's own (catalog) cost model.\n\n";
  if (t.stack != "none")
    o << "GPUs under the " << t.stack << " software stack (" << name << " model's kernel times, the stack's "
      << "host, launch and gap time; host_op_us does not count). The roofline column has no stack.\n\n";
  o << "| figure | paper | published | roofline | error | " << t.model << ", in sample | error | " << t.model
    << ", out of sample | error | fit set | out-of-sample fit |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const FigureRow& r : v.rows) {
    const PaperFigure& f = *r.fig;
    const std::string unit = f.unit.empty() ? "" : " " + f.unit;
    o << "| " << f.id << ": " << f.what << " | " << f.paper << " | " << fmt(f.published) << unit << " | ";
    if (!f.evaluated) {
      o << "- | - | - | - | - | - | no | not evaluated: " << f.not_evaluated << " |\n";
      continue;
    }
    if (!r.failed.empty()) {
      o << fmt(r.roofline) << " | " << pct(r.roofline / f.published - 1) << " | - | - | - | - | "
        << (f.fit ? "yes" : "no") << " | no prediction under the " << t.stack << " stack: " << r.failed << " |\n";
      continue;
    }
    o << fmt(r.roofline) << " | " << pct(r.roofline / f.published - 1) << " | " << fmt(r.in_sample)
      << " | " << pct(r.in_sample / f.published - 1) << " | " << fmt(r.out_sample) << " | "
      << pct(r.out_sample / f.published - 1) << " | " << (f.fit ? "yes" : "no") << " | " << r.fold << " |\n";
  }
  o << "\nEvaluated figures: " << v.evaluated << ". Out of sample: median |error| " << pct(v.out_median).substr(1)
    << ", worst " << pct(v.out_worst).substr(1) << " (target: median <= 10%, none worse than 20%: "
    << (v.evaluated > 0 && v.out_median <= 0.10 && v.out_worst <= 0.20 ? "met" : "not met")
    << "). In sample (fit set): median " << pct(v.in_median).substr(1) << ", worst "
    << pct(v.in_worst).substr(1) << ". Roofline: median " << pct(v.roofline_median).substr(1) << ".\n";
  if (v.failed > 0)
    o << "Without a prediction under the " << t.stack << " stack (left out of the summaries): " << v.failed
      << " figure(s).\n";
  return o.str();
}

std::string validation_csv(const Validation& v) {
  std::ostringstream o;
  o << "id,paper,published,unit,evaluated,fit,roofline,in_sample,out_of_sample,out_of_sample_error\n";
  for (const FigureRow& r : v.rows) {
    const PaperFigure& f = *r.fig;
    const bool ok = f.evaluated;
    o << csv_field(f.id) << "," << csv_field(f.paper) << "," << fmt(f.published, 10) << "," << csv_field(f.unit) << "," << (ok ? 1 : 0) << ","
      << (f.fit ? 1 : 0) << ",";
    if (ok && !r.failed.empty())
      o << fmt(r.roofline, 10) << ",,,";
    else if (ok)
      o << fmt(r.roofline, 10) << "," << fmt(r.in_sample, 10) << "," << fmt(r.out_sample, 10) << ","
        << fmt(r.out_sample / f.published - 1, 6);
    else
      o << ",,,";
    o << "\n";
  }
  return o.str();
}

}  // namespace vlasim
