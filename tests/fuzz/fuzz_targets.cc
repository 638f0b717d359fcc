#include "fuzz/fuzz_targets.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <exception>
#include <string>

#include "models/builder.h"
#include "reports/report.h"
#include "scenarios/config/config.h"
#include "scenarios/scenario.h"
#include "sim/engine/engine.h"
#include "sim/measured/gpu_import.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/measured/gpu_network.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/measured/profile.h"
#include "sim/measured/torch_trace.h"
#include "sim/engine/planner.h"

namespace vlasim::fuzz {
namespace {

const std::string kSource = VLASIM_SOURCE_DIR;

// Runs `read`; a ConfigError naming `name` with a message is a refusal, anything else thrown is
// a Finding that says what escaped.
template <typename F>
Outcome guarded(const std::string& name, F&& read) {
  try {
    read();
    return Outcome::Accepted;
  } catch (const ConfigError& e) {
    if (e.file() != name || e.message().empty())
      throw Finding("a refusal that does not name the input '" + name + "': " + e.what());
    return Outcome::Refused;
  } catch (const Finding&) {
    throw;
  } catch (const std::exception& e) {
    throw Finding(std::string("an unnamed error escaped the reader: ") + e.what());
  }
}

std::string text_of(std::string_view bytes) { return std::string(bytes); }

}  // namespace

Outcome scenario(std::string_view bytes) {
  const std::string name = "fuzz.yaml";
  return guarded(name, [&] {
    Scenario s = load_scenario_text(text_of(bytes), name, kSource + "/sim/catalog",
                                    kSource + "/models/cards");
    resolve_auto_dtypes(s, DType::F32);
    Plan plan = plan_scenario(s);
    resolve_stream_loads(s, plan);
    SimOptions o;
    o.max_requests = kMaxRequests;
    o.max_memory_bytes = 2e8;
    o.trace_limit = 100;
    SimResult r = simulate(s, plan, o);
    Report rep = make_report(s, plan, r, "simulate");
    (void)summary_text(rep);
  });
}

Outcome card(std::string_view bytes) {
  // A card's name must match its file's: the input is named after the name it gives, so that
  // the shipped cards it starts from are read whole rather than refused at their name.
  const std::string text = text_of(bytes);
  std::string name = "fuzz.yaml";
  try {
    ConfigNode doc = ConfigNode::load_string(text, name);
    if (doc.is_map()) {
      ConfigNode n = doc.optional("name");
      if (n.defined() && n.is_scalar()) {
        const std::string stem = n.as_string();
        if (!stem.empty() && stem.size() < 64 && stem.find_first_of("/\\.") == std::string::npos)
          name = stem + ".yaml";
      }
    }
  } catch (const ConfigError&) {
    // load_card_text below refuses it again, naming fuzz.yaml.
  }
  return guarded(name, [&] { (void)load_card_text(text, name); });
}

Outcome catalog(std::string_view bytes) {
  const std::string name = "fuzz.yaml";
  return guarded(name, [&] {
    Catalog c;
    c.load_text(text_of(bytes), name);
  });
}

Outcome profile(std::string_view bytes) {
  const std::string name = "fuzz.json";
  return guarded(name, [&] { (void)parse_profile(text_of(bytes), name); });
}

Outcome trace(std::string_view bytes) {
  const std::string name = "fuzz.json";
  // the graph the traces are matched to: pi0_tiny at 3 steps, fp32, no passes (the seeds' run)
  static const OpGraph graph = [] {
    const ModelCard card = find_card(kSource + "/models/cards", "pi0_tiny", ConfigNode());
    RunShape shape = card.defaults;
    shape.steps = 3;
    shape.dtype = DType::F32;
    shape.passes = std::vector<std::string>{};
    return build_graph(card, shape);
  }();
  return guarded(name, [&] {
    const TorchTrace t = parse_torch_trace(text_of(bytes), name);
    std::vector<TraceInference> inf;
    try {
      std::string chosen;
      inf = trace_inferences(t, "", &chosen);
    } catch (const ConfigError& e) {
      if (e.file() != name) throw;  // a trace without inferences is still matched below
    }
    if (t.shapes) (void)match_trace(t, graph, inf);
  });
}

Outcome gpu_import(std::string_view bytes) {
  const std::string text = text_of(bytes);
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && text[first] == '{';
  const std::string name = json ? "fuzz.json" : "mlp.csv";
  return guarded(name, [&] {
    for (const KernelSample& s : json ? parse_apxinf(text, name) : parse_vidur(text, name))
      if (!(s.seconds > 0) || !std::isfinite(s.seconds) || !(s.op.flops >= 0) || !(s.op.bytes_read > 0))
        throw Finding("an imported sample with time " + std::to_string(s.seconds) + " s, " +
                      std::to_string(s.op.flops) + " flops, " + std::to_string(s.op.bytes_read) + " bytes read");
  });
}

Outcome gpu_network(std::string_view bytes) {
  const std::string text = text_of(bytes);
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool profile = first != std::string::npos && (text[first] == '#' || text.compare(first, 5, "links") == 0);
  const std::string name = profile ? "net.yaml" : "send_recv.csv";
  auto check = [](const NetworkFit& f) {
    const double a = collective_seconds(f, 1e3), b = collective_seconds(f, 1e9);
    if (!(f.latency_s >= 0) || !std::isfinite(f.latency_s) || !(f.bytes_per_s > 0) || !std::isfinite(f.bytes_per_s) ||
        !std::isfinite(b) || !(b >= a))
      throw Finding("a network fit with latency " + std::to_string(f.latency_s) + " s, bandwidth " +
                    std::to_string(f.bytes_per_s) + " B/s");
  };
  return guarded(name, [&] {
    if (profile) {
      for (const NetworkFit& f : parse_network_profile(text, name)) check(f);
      return;
    }
    for (const NetworkGroup& g : parse_vidur_network(text, name, "fuzz")) {
      for (const NetworkPoint& p : g.points)
        if (!(p.seconds > 0) || !std::isfinite(p.seconds) || !(p.bytes > 0))
          throw Finding("a network row of " + std::to_string(p.bytes) + " bytes in " + std::to_string(p.seconds) + " s");
      check(fit_network(g));
    }
  });
}

Outcome kernel_fit(std::string_view bytes) {
  const std::string name = "kernel_model.csv";
  static const Catalog cat = Catalog::load_dir(kSource + "/sim/catalog");
  return guarded(name, [&] {
    const GpuKernelParams p = parse_kernel_params(text_of(bytes), name);
    // Every accepted fit prices a small and a large op of each class to a finite, positive time.
    const DeviceSpec& gpu = *cat.find("h100-sxm");
    for (const Op& op : {gemm_op(1, 64, 64, false, DType::F16), gemm_op(8192, 8192, 8192, false, DType::BF16),
                         norm_op(OpFn::RMSNorm, 1, 64, DType::F16), norm_op(OpFn::LayerNorm, 4096, 4096, DType::F16),
                         eltwise_op(OpFn::Add, 1, 64, 2, DType::F16), eltwise_op(OpFn::Silu, 4096, 16384, 1, DType::F16)}) {
      const double t = kernel_model_seconds(op, gpu, p);
      if (!(t > 0) || !std::isfinite(t) || t > 1e3)
        throw Finding("an accepted fit prices " + op.name + " at " + std::to_string(t) + " s");
    }
  });
}

Outcome host_entry(std::string_view bytes) {
  const std::string name = "host.json";
  // The validation profile cut to one section of four ops, its host entry the input's text.
  static const std::pair<std::string, std::string> around = [] {
    nlohmann::json j = nlohmann::json::parse(read_input_file(kSource + "/scenarios/validation/profile.json"));
    j["sections"] = nlohmann::json::array({j["sections"][0]});
    nlohmann::json& table = j["sections"][0]["table"];
    nlohmann::json kept = nlohmann::json::object();
    for (auto it = table.begin(); it != table.end() && kept.size() < 4; ++it) kept[it.key()] = it.value();
    table = kept;
    j["host"] = "@HOST@";
    const std::string t = j.dump(1);
    const size_t at = t.find("\"@HOST@\"");
    return std::pair<std::string, std::string>{t.substr(0, at), t.substr(at + 8)};
  }();
  static const Catalog cat = Catalog::load_dir(kSource + "/sim/catalog");
  return guarded(name, [&] {
    const DeviceProfile p = parse_profile(around.first + text_of(bytes) + around.second, name);
    if (p.host.empty()) return;
    // Every accepted host entry gives the CPU finite, positive bandwidths and a sane cache.
    DeviceSpec cpu = *cat.find("epyc-2vcpu");
    apply_host_entry(cpu, p.host, 2);
    (void)host_entry_text(p.host, 2);
    if (!(cpu.mem_bw > 0) || !std::isfinite(cpu.mem_bw) || !(cpu.core_bw > 0) || !std::isfinite(cpu.core_bw) ||
        !(cpu.l2_bytes >= 0) || !std::isfinite(cpu.l2_bytes) || cpu.mem_bw < 1e7 || cpu.core_bw > 1e14)
      throw Finding("an accepted host entry gives memory " + std::to_string(cpu.mem_bw) + " B/s, a core " +
                    std::to_string(cpu.core_bw) + " B/s, a cache of " + std::to_string(cpu.l2_bytes) + " bytes");
  });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"scenario", scenario,
       {"scenarios", "scenarios/systems", "scenarios/papers", "scenarios/validation",
        "tests/data/broken_scenarios", "tests/data/bad_inputs/scenarios"}},
      {"card", card,
       {"models/cards", "tests/data/cards", "tests/data/broken_cards", "tests/data/bad_inputs/cards"}},
      {"catalog", catalog,
       {"sim/catalog", "tests/data/broken_catalog", "tests/data/bad_inputs/catalog"}},
      {"profile", profile, {"scenarios/validation", "tests/data/bad_inputs/profiles"}},
      {"trace", trace, {"tests/data/torch_trace/seeds", "tests/data/bad_inputs/traces"}},
      {"gpu_import", gpu_import, {"tests/data/gpu_import", "tests/data/bad_inputs/gpu_import"}, true},
      {"gpu_network", gpu_network, {"tests/data/gpu_network", "tests/data/bad_inputs/gpu_network"}, true},
      {"kernel_fit", kernel_fit, {"sim/kernel_fit", "tests/data/kernel_fit", "tests/data/bad_inputs/kernel_fit"}},
      {"host_entry", host_entry, {"tests/data/host_entry", "tests/data/bad_inputs/host_entry"}},
  };
  return all;
}

}  // namespace vlasim::fuzz
