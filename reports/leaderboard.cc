#include "reports/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "reports/plot.h"
#include "sim/engine/plan.h"
#include "scenarios/config/csv.h"
#include "sim/engine/planner.h"
#include "sim/costs/stack_model.h"

namespace vlasim {

namespace {

constexpr double kSecondsPerYear = 365.25 * 86400;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// Dense matrix peak of a whole device at `dtype`, FLOP/s.
double device_peak(const DeviceSpec& d, DType dtype) {
  if (d.type == DeviceType::Gpu) return d.peak.matrix(dtype);
  auto it = d.isa.find(d.default_isa);
  return it == d.isa.end() ? 0 : it->second.matrix(dtype) * d.cores();
}

std::string hw_tier(double peak, double memory) {
  if (peak < kBasicPeakFlops || memory < kBasicMemoryBytes) return "basic";
  if (peak >= kUltraPeakFlops && memory >= kUltraMemoryBytes) return "ultra";
  return "standard";
}

// A device instance name for catalog entry `device` (scenario names hold letters, digits,
// '_' and '-').
std::string instance_name(const std::string& device) {
  std::string out;
  for (char ch : device) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-') ? ch : '_';
  return out;
}

std::string scenario_text(const LeaderboardModel& m, const std::string& device, bool gpu) {
  std::ostringstream os;
  os << "name: leaderboard-" << instance_name(device) << "\nseed: 1\nhardware:\n  devices:\n    - {name: "
     << instance_name(device) << ", catalog: \"" << device << "\""
     << (gpu && m.graph_capture ? ", graph_capture: true" : "") << "}\nmodels:\n  - name: model\n    card: " << m.card << "\n    views: "
     << m.shape.views << "\n    prompt: " << m.shape.prompt << "\n    chunk: " << m.shape.chunk << "\n    steps: "
     << m.shape.steps << "\n    batch: " << m.shape.batch << "\n    dtype: " << to_string(m.shape.dtype)
     << "\n";
  if (const DpCache& dc = m.shape.dp_cache; dc.on())
    os << "    dp_cache: {start: " << dc.start << ", end: " << dc.end << ", interval: " << dc.interval
       << ", keep: " << dc.keep << "}\n";
  if (m.shape.passes) os << "    passes: [" << join(*m.shape.passes) << "]\n";
  os << "workload:\n  - {name: one, model: model, rate_hz: 1, duration_s: 1}\n"
     << "policies: {queue: fifo, pipeline: serial, cost_model: " << m.cost_model
     << (m.stack != "none" ? ", stack: " + m.stack : std::string()) << "}\n";
  return os.str();
}

// Strips the "<file>:line:col: " of an error about a generated scenario.
std::string reason(const std::string& what) {
  const size_t at = what.find(": ");
  return what.rfind("leaderboard", 0) == 0 && at != std::string::npos ? what.substr(at + 2) : what;
}

}  // namespace

const DeviceSpec& compute_device(const Catalog& catalog, const std::string& name, const ConfigNode& where,
                                 const std::string& catalog_dir) {
  const DeviceSpec* spec = catalog.find(name);
  if (spec && spec->type != DeviceType::Link) return *spec;
  std::vector<std::string> valid;
  for (const auto& [entry, s] : catalog.entries())
    if (s.type != DeviceType::Link) valid.push_back(entry);
  where.fail("no GPU or CPU called '" + name + "' in the catalog (" + catalog_dir + "); valid names are: " +
             join(valid));
}

Scenario one_device_scenario(const LeaderboardModel& model, const std::string& device,
                             const std::string& catalog_dir, const std::string& cards_dir) {
  const DeviceSpec* spec = Catalog::load_dir(catalog_dir).find(device);
  const bool gpu = spec && spec->type == DeviceType::Gpu;
  return load_scenario_text(scenario_text(model, device, gpu), "leaderboard-" + device, catalog_dir, cards_dir);
}

Leaderboard make_leaderboard(const LeaderboardModel& model, const std::string& catalog_dir,
                             const std::string& cards_dir, const LeaderboardOptions& o,
                             const std::function<void(double)>& progress) {
  Leaderboard lb;
  lb.model = model;
  lb.options = o;
  lb.dtype = model.shape.dtype;
  const Catalog catalog = Catalog::load_dir(catalog_dir);
  std::vector<std::string> devices = o.devices;
  if (devices.empty())
    for (const auto& [name, spec] : catalog.entries())
      if (spec.type == DeviceType::Gpu) devices.push_back(name);
  const ConfigNode where(YAML::Node(join(o.devices)), std::make_shared<const std::string>("<command line>"),
                         "--devices");
  {
    std::vector<std::string> unique;
    for (const std::string& d : devices)
      if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
    devices = std::move(unique);  // a name given twice is one row
  }
  for (const std::string& d : devices) compute_device(catalog, d, where, catalog_dir);  // all named before any runs
  check_stack_name(model.stack, ConfigNode(YAML::Node(model.stack),
                                           std::make_shared<const std::string>("<command line>"), "--stack"));
  {
    const ModelCard card = find_card(cards_dir, model.card, where);
    lb.params = build_graph(card, model.shape).param_bytes() / dtype_bytes(model.shape.dtype);
    lb.model_tier = lb.params < kSmallModelParams ? "small" : "large";
  }
  size_t done = 0;
  for (const std::string& d : devices) {
    const DeviceSpec& spec = compute_device(catalog, d, where, catalog_dir);
    LeaderboardRow row;
    row.device = d;
    row.description = spec.description;
    row.peak_flops = device_peak(spec, model.shape.dtype);
    row.memory_bytes = spec.mem_bytes;
    row.hw_tier = hw_tier(row.peak_flops, row.memory_bytes);
    // A CPU entry's power and price are per socket (as datasheets give them).
    const double per_device = spec.type == DeviceType::Cpu ? spec.sockets : 1;
    row.price_usd = per_device * spec.price_usd;
    try {
      const Scenario s = one_device_scenario(model, d, catalog_dir, cards_dir);
      const Plan p = plan_scenario(s);
      const ModelPlan& mp = p.models.at(0);
      row.fits = true;
      row.latency_s = mp.alone_seconds;
      row.rate_hz = row.latency_s > 0 ? 1 / row.latency_s : 0;
      row.feasible = row.rate_hz >= o.min_hz;
      const DeviceMemory& mem = p.memory.at(0);
      row.model_memory_bytes = mem.total();
      double busy = 0, total = 0;
      const std::vector<double> op_s = predicted_op_seconds(s, p, 0);  // under the stack if any
      for (size_t i = 0; i < mp.graph.size(); ++i) {
        if (mp.graph.op(static_cast<int>(i)).kind == OpKind::Transfer) continue;
        busy += std::max(mp.op_costs[i].compute_seconds, mp.op_costs[i].memory_seconds);
        total += op_s[i];
      }
      row.utilisation = total > 0 ? std::min(1.0, busy / total) : 0;
      if (spec.tdp_w > 0) {
        row.idle_estimated = spec.idle_w < 0;
        const double tdp = per_device * spec.tdp_w;
        const double idle = row.idle_estimated ? o.idle_fraction * tdp : per_device * spec.idle_w;
        row.power_w = idle + (tdp - idle) * row.utilisation;
        row.energy_j = row.power_w * row.latency_s;
      }
      if (spec.price_usd > 0 && row.energy_j >= 0) {
        const double capex = row.price_usd * row.latency_s / (o.lifetime_years * kSecondsPerYear * o.utilisation);
        const double energy = row.energy_j / 3.6e6 * o.usd_per_kwh;
        row.usd_per_million = 1e6 * (capex + energy);
      }
      row.roofline = make_roofline(s, p, 0);
      row.roofline.scenario = "leaderboard";
      row.roofline.model = model.name;
    } catch (const ConfigError& e) {
      row.fits = false;
      row.why = reason(e.what());
    }
    lb.rows.push_back(std::move(row));
    ++done;
    if (progress) progress(static_cast<double>(done) / static_cast<double>(devices.size()));
  }
  // Pareto front over (latency, energy, cost) among feasible rows with every figure known.
  auto known = [](const LeaderboardRow& r) { return r.feasible && r.energy_j >= 0 && r.usd_per_million >= 0; };
  for (LeaderboardRow& a : lb.rows) {
    if (!known(a)) continue;
    a.pareto = std::none_of(lb.rows.begin(), lb.rows.end(), [&](const LeaderboardRow& b) {
      if (&a == &b || !known(b)) return false;
      const bool no_worse = b.latency_s <= a.latency_s && b.energy_j <= a.energy_j && b.usd_per_million <= a.usd_per_million;
      const bool better = b.latency_s < a.latency_s || b.energy_j < a.energy_j || b.usd_per_million < a.usd_per_million;
      return no_worse && better;
    });
  }
  std::stable_sort(lb.rows.begin(), lb.rows.end(), [](const LeaderboardRow& a, const LeaderboardRow& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.fits != b.fits) return a.fits;
    if (a.latency_s != b.latency_s) return a.latency_s < b.latency_s;
    return a.device < b.device;
  });
  return lb;
}

std::string leaderboard_markdown(const Leaderboard& lb) {
  const LeaderboardOptions& o = lb.options;
  std::ostringstream os;
  os << "# CET leaderboard: " << lb.model.name << "\n\n"
     << "Card " << lb.model.card << ", " << lb.model.shape.views << " views, prompt " << lb.model.shape.prompt
     << ", chunk " << lb.model.shape.chunk << ", " << lb.model.shape.steps << " steps, batch " << lb.model.shape.batch
     << ", " << to_string(lb.dtype)
     << (lb.model.shape.dp_cache.on()
             ? ", DP-Cache over steps [" + std::to_string(lb.model.shape.dp_cache.start) + ", " +
                   std::to_string(lb.model.shape.dp_cache.end) + ") (a full step every " +
                   std::to_string(lb.model.shape.dp_cache.interval) + ", " +
                   std::to_string(lb.model.shape.dp_cache.keep) + " block(s) kept at each end)"
             : std::string())
     << "; " << printf_number("%.3g", lb.params / 1e9) << " B parameters: **" << lb.model_tier
     << "** model (small below " << printf_number("%g", kSmallModelParams / 1e9) << " B).\n\n"
     << "One request at a time, predicted by the " << lb.model.cost_model << " cost model (not measured), GPUs "
     << (lb.model.stack != "none"
             ? "under the " + lb.model.stack + " software stack (its host, launch and gap time around the cost "
               "model's kernel times)"
             : lb.model.graph_capture ? "replaying a captured CUDA Graph" : "launching each kernel (no graph capture)")
     << ". Feasible: the control rate "
        "1 / latency is at least "
     << printf_number("%g", o.min_hz) << " Hz. Energy: P = P_idle + (TDP - P_idle) x u, u the busy fraction of the "
        "request's time (linear power model, Fan et al., ISCA 2007), P_idle from the catalog or "
     << printf_number("%g", 100 * o.idle_fraction) << "% of TDP (marked *). Cost per million inferences: price over "
     << printf_number("%g", o.lifetime_years) << " years at " << printf_number("%g", 100 * o.utilisation) << "% utilisation, plus energy at "
     << printf_number("%g", o.usd_per_kwh) << " USD/kWh. Hardware tier: basic below " << printf_number("%g", kBasicPeakFlops / 1e12)
     << " TFLOP/s or " << printf_number("%g", kBasicMemoryBytes / 1e9) << " GB, ultra from " << printf_number("%g", kUltraPeakFlops / 1e12)
     << " TFLOP/s with " << printf_number("%g", kUltraMemoryBytes / 1e9)
     << " GB, standard between. Pareto: no other feasible device is at least as good in time, energy and cost "
        "and better in one.\n\n"
     << "| device | tier | peak TFLOP/s | memory GB | latency ms | rate Hz | feasible | model GB | busy | power W | "
        "energy J | price USD | USD / M inf. | Pareto |\n"
     << "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const LeaderboardRow& r : lb.rows) {
    os << "| " << r.device << " | " << r.hw_tier << " | " << printf_number("%.4g", r.peak_flops / 1e12) << " | "
       << printf_number("%.4g", r.memory_bytes / 1e9) << " | ";
    if (!r.fits) {
      os << "does not fit: " << r.why << " | | no | | | | | " << (r.price_usd > 0 ? printf_number("%.0f", r.price_usd) : "n/a")
         << " | | |\n";
      continue;
    }
    os << printf_number("%.4g", r.latency_s * 1e3) << " | " << printf_number("%.4g", r.rate_hz) << " | " << (r.feasible ? "yes" : "no")
       << " | " << printf_number("%.3g", r.model_memory_bytes / 1e9) << " | " << printf_number("%.0f%%", 100 * r.utilisation) << " | "
       << (r.power_w >= 0 ? printf_number("%.4g", r.power_w) + (r.idle_estimated ? "*" : "") : "n/a") << " | "
       << (r.energy_j >= 0 ? printf_number("%.4g", r.energy_j) : "n/a") << " | "
       << (r.price_usd > 0 ? printf_number("%.0f", r.price_usd) : "n/a") << " | "
       << (r.usd_per_million >= 0 ? printf_number("%.4g", r.usd_per_million) : "n/a") << " | " << (r.pareto ? "yes" : "") << " |\n";
  }
  return os.str();
}

std::string leaderboard_csv(const Leaderboard& lb) {
  std::ostringstream os;
  const bool stack = lb.model.stack != "none";  // else the columns stacks came before
  os << "model,card,model_tier,params,device,hw_tier,peak_flops,memory_bytes,fits,latency_s,rate_hz,feasible,"
        "model_memory_bytes,utilisation,power_w,energy_j,idle_estimated,price_usd,usd_per_million,pareto"
     << (stack ? ",stack\n" : "\n");
  auto opt = [](double x) { return x >= 0 ? printf_number("%.9g", x) : std::string(); };
  for (const LeaderboardRow& r : lb.rows)
    os << csv_field(lb.model.name) << ',' << csv_field(lb.model.card) << ',' << csv_field(lb.model_tier) << ',' << printf_number("%.9g", lb.params) << ','
       << csv_field(r.device) << ',' << csv_field(r.hw_tier) << ',' << printf_number("%.9g", r.peak_flops) << ',' << printf_number("%.9g", r.memory_bytes) << ','
       << (r.fits ? 1 : 0) << ',' << (r.fits ? printf_number("%.9g", r.latency_s) : "") << ','
       << (r.fits ? printf_number("%.9g", r.rate_hz) : "") << ',' << (r.feasible ? 1 : 0) << ','
       << (r.fits ? printf_number("%.9g", r.model_memory_bytes) : "") << ',' << (r.fits ? printf_number("%.9g", r.utilisation) : "") << ','
       << (r.fits ? opt(r.power_w) : "") << ',' << (r.fits ? opt(r.energy_j) : "") << ',' << (r.idle_estimated ? 1 : 0)
       << ',' << (r.price_usd > 0 ? printf_number("%.9g", r.price_usd) : "") << ',' << (r.fits ? opt(r.usd_per_million) : "")
       << ',' << (r.pareto ? 1 : 0) << (stack ? ',' + csv_field(lb.model.stack) : std::string()) << '\n';
  return os.str();
}

std::vector<std::string> write_leaderboard(const Leaderboard& lb, const std::string& dir,
                                           std::vector<std::string>* warnings) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const fs::path base(dir);
  std::vector<std::string> written;
  write_into(dir, "leaderboard.md", leaderboard_markdown(lb), &written);
  write_into(dir, "leaderboard.csv", leaderboard_csv(lb), &written);
  RooflineReport all;
  all.scenario = "leaderboard";
  all.model = lb.model.name;
  all.stack = lb.model.stack;
  for (const LeaderboardRow& r : lb.rows)
    all.rows.insert(all.rows.end(), r.roofline.rows.begin(), r.roofline.rows.end());
  if (!all.rows.empty())
    for (auto& f : write_roofline(all, dir, warnings)) written.push_back(f);
  if (!on_path("gnuplot")) {
    if (all.rows.empty()) warnings->push_back("gnuplot is not on PATH: leaderboard plots skipped");
    return written;  // else write_roofline has said so
  }

  // Pareto plots: latency against energy and against cost, one point per device that fits.
  struct Axis {
    const char* stem;
    const char* label;
    double LeaderboardRow::*field;
    double scale;
  };
  for (const Axis& ax : {Axis{"leaderboard_energy", "energy per inference (J)", &LeaderboardRow::energy_j, 1},
                         Axis{"leaderboard_cost", "USD per million inferences", &LeaderboardRow::usd_per_million, 1}}) {
    std::ostringstream front, other;
    for (const LeaderboardRow& r : lb.rows) {
      if (!r.fits || r.*ax.field < 0) continue;
      (r.pareto ? front : other) << printf_number("%.9g", r.latency_s * 1e3) << ' ' << printf_number("%.9g", r.*ax.field * ax.scale)
                                 << " \"" << r.device << "\"\n";
    }
    const std::string dat = (base / (std::string(ax.stem) + ".dat")).string();
    const std::string gp = (base / (std::string(ax.stem) + ".gp")).string();
    const std::string svg = (base / (std::string(ax.stem) + ".svg")).string();
    // Two data blocks: the front (index 0) and the rest (index 1); a dummy point keeps an
    // empty block from stopping gnuplot.
    const std::string f = front.str().empty() ? "NaN NaN \"\"\n" : front.str();
    const std::string x = other.str().empty() ? "NaN NaN \"\"\n" : other.str();
    write_file(dat, f + "\n\n" + x);
    std::ostringstream s;
    s << kSvgHeader << "set output " << gp_quote(std::string(ax.stem) + ".svg") << '\n'
      << "set title " << gp_quote("CET: " + lb.model.name + ", latency vs " + ax.label) << '\n'
      << "set logscale xy\nset xlabel 'latency (ms)'\nset ylabel " << gp_quote(ax.label) << '\n'
      << "set key right top\nset grid\nset offsets graph 0.05, graph 0.2, graph 0.1, graph 0.1\n"
      << "set arrow from " << printf_number("%.9g", 1e3 / lb.options.min_hz) << ", graph 0 to " << printf_number("%.9g", 1e3 / lb.options.min_hz)
      << ", graph 1 nohead dt 2 lc rgb '#7f7f7f'\n"
      << "plot " << gp_quote(ax.stem + std::string(".dat")) << " index 0 using 1:2 with points pt 7 ps 1.4 lc rgb "
      << "'#d62728' title 'Pareto front (feasible)', \\\n"
      << "     " << gp_quote(ax.stem + std::string(".dat")) << " index 1 using 1:2 with points pt 6 ps 1.2 lc rgb "
      << "'#1f77b4' title 'other devices', \\\n"
      << "     " << gp_quote(ax.stem + std::string(".dat")) << " using 1:2:3 with labels offset 0.8,0.6 left font ',9' "
      << "notitle\n";
    write_file(gp, s.str());
    const std::string error = run_gnuplot(gp, svg);
    if (!error.empty())
      warnings->push_back(error);
    else
      written.push_back(svg);
  }
  return written;
}

}  // namespace vlasim
