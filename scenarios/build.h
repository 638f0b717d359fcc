// Building a scenario in C++ instead of reading a YAML file. ScenarioBuilder collects
// devices, models, request streams and policies as plain structs whose fields mirror the
// scenario file's keys (README.md "Scenario format"); build() turns them into a document and
// hands it to the scenario loader (load_scenario_node). So a built scenario gets exactly the
// loader's defaults and checks, and a mistake throws ConfigError naming the key, e.g.
// "<my-scenario>: key 'models[0].card': no model card 'pi7' in ...; cards are: ...".
//
// Unset (std::nullopt / empty) fields are left out of the document: the loader's default
// applies (the card's run shape, one stream per GPU, one core group per NUMA node, ...).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/scenario.h"

namespace vlasim {

namespace build {

// A swappable part by registry name (`vlasim list`) and its parameters. Each parameter value
// is read as a YAML flow value: "16" is a number, "true" a boolean, "[head]" a list.
struct Part {
  std::string name;  // "" = the loader's default
  std::map<std::string, std::string> params;
};

struct GpuStream {
  std::string name;
  std::optional<int> sms;              // give sms or sm_fraction (or neither: all SMs)
  std::optional<double> sm_fraction;
};

struct CoreGroup {
  std::string name;
  int cores = 1;
  std::optional<int> node;
};

// A device from the hardware catalog (sim/catalog/*.yaml), e.g. rtx4090, h100-sxm, epyc-2vcpu.
struct Device {
  std::string name;
  std::string catalog;
  std::optional<int> count;            // N makes devices <name>0 .. <name>N-1
  std::vector<GpuStream> streams;      // GPU only
  std::vector<CoreGroup> core_groups;  // CPU only
  std::string isa;                     // CPU only; "" = the catalog entry's default
  std::optional<bool> graph_capture;   // GPU only
  std::optional<double> reserved_gb;
};

struct Link {
  std::string catalog;                 // e.g. pcie4-x16
  std::string a, b;                    // the two devices it joins
  std::string name;                    // "" = "<a>-<b>"
  std::string memory;                  // pinned | pageable; "" = pinned
};

// Stages (vision, prefix, action, decode, head), optionally a block range of a single
// stage, on a device or one of its units ("cpu0.b").
struct Placement {
  std::vector<std::string> stages;
  std::optional<std::pair<int, int>> blocks;  // inclusive [first, last]
  std::string device;
};

struct Model {
  std::string card;                    // a card name in the cards directory, e.g. pi0_small
  std::string name;                    // "" = the card's name
  std::optional<int> views, prompt, chunk, steps, batch;
  std::string dtype;                   // fp32 | bf16 | fp16 | int8 | auto; "" = the card's
  std::vector<Placement> placement;    // empty (and no partition): everything on the first device
  Part partition;                      // instead of placement, e.g. {"block_split", {...}}
  Part dynamic_zone;
};

// A stream of requests (workload entry).
struct Stream {
  std::string model;                   // a model instance name
  double rate_hz = 0;
  double duration_s = 0;
  std::string name;                    // "" = the model's name
  std::optional<double> jitter_ms, deadline_ms, start_s;
  std::optional<int> count;            // N makes streams <name>0 .. <name>N-1
  // Instead of rate_hz: a fraction of the model's alone throughput as planned (the scenario
  // file's `load:`; resolve_stream_loads after planning).
  std::optional<double> load;
  std::string arrival;                 // periodic | poisson; "" = periodic
};

struct Background {
  std::string device;                  // "dev" or "dev.unit"
  std::optional<double> compute, memory;  // fractions of the resource
  std::optional<double> start_s, end_s;
};

}  // namespace build

class ScenarioBuilder {
 public:
  explicit ScenarioBuilder(std::string name) : name_(std::move(name)) {}

  ScenarioBuilder& description(std::string text);
  ScenarioBuilder& seed(uint64_t seed);
  ScenarioBuilder& drain_s(double seconds);
  ScenarioBuilder& device(build::Device d);
  ScenarioBuilder& link(build::Link l);
  ScenarioBuilder& model(build::Model m);
  ScenarioBuilder& stream(build::Stream s);
  ScenarioBuilder& background(build::Background b);
  // Policies by registry name; an empty name keeps the loader's default (fifo, serial,
  // roofline).
  ScenarioBuilder& queue(build::Part p);
  ScenarioBuilder& pipeline(build::Part p);
  ScenarioBuilder& cost_model(build::Part p);

  // The validated scenario, read from a fresh document each call (the builder may be changed
  // and built again). Throws ConfigError, located by key, on any problem.
  Scenario build(const std::string& catalog_dir = default_catalog_dir(),
                 const std::string& cards_dir = default_cards_dir()) const;

  // The same document as scenario-file YAML (to log it, or save it for `vlasim simulate`).
  std::string yaml() const;

 private:
  YAML::Node document() const;

  std::string name_, description_;
  std::optional<uint64_t> seed_;
  std::optional<double> drain_s_;
  std::vector<build::Device> devices_;
  std::vector<build::Link> links_;
  std::vector<build::Model> models_;
  std::vector<build::Stream> streams_;
  std::vector<build::Background> background_;
  build::Part queue_, pipeline_, cost_model_;
};

}  // namespace vlasim
