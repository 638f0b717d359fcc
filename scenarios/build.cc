#include "scenarios/build.h"

#include <memory>

namespace vlasim {

namespace {

template <class T>
void set_if(YAML::Node& n, const char* key, const std::optional<T>& v) {
  if (v) n[key] = *v;
}

void set_if(YAML::Node& n, const char* key, const std::string& v) {
  if (!v.empty()) n[key] = v;
}

// `part` as the scenario file writes it: a bare name, or {name, params}. `where` names the key
// for a malformed parameter value.
YAML::Node part_node(const build::Part& part, const std::string& scenario,
                     const std::string& where) {
  if (part.params.empty()) return YAML::Node(part.name);
  YAML::Node n;
  n["name"] = part.name;
  YAML::Node params(YAML::NodeType::Map);
  for (const auto& [key, value] : part.params) {
    try {
      params[key] = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw ConfigError(scenario, 0, 0, where + ".params." + key,
                        "cannot read '" + value + "' as a value: " + e.msg);
    }
  }
  n["params"] = params;
  return n;
}

YAML::Node flow_list(const std::vector<std::string>& items) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const auto& s : items) n.push_back(s);
  return n;
}

// One entry of hardware.devices as the scenario file writes it.
YAML::Node builder_device_node(const build::Device& d) {
  YAML::Node n;
  n["name"] = d.name;
  n["catalog"] = d.catalog;
  set_if(n, "count", d.count);
  set_if(n, "isa", d.isa);
  set_if(n, "graph_capture", d.graph_capture);
  set_if(n, "reserved_gb", d.reserved_gb);
  if (!d.streams.empty()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& s : d.streams) {
      YAML::Node u;
      u["name"] = s.name;
      set_if(u, "sms", s.sms);
      set_if(u, "sm_fraction", s.sm_fraction);
      list.push_back(u);
    }
    n["streams"] = list;
  }
  if (!d.core_groups.empty()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& g : d.core_groups) {
      YAML::Node u;
      u["name"] = g.name;
      u["cores"] = g.cores;
      set_if(u, "node", g.node);
      list.push_back(u);
    }
    n["core_groups"] = list;
  }
  return n;
}

// One entry of models as the scenario file writes it; `where` (models[i]) names its keys in errors.
YAML::Node builder_model_node(const build::Model& m, const std::string& file, const std::string& where) {
  YAML::Node n;
  set_if(n, "name", m.name);
  n["card"] = m.card;
  set_if(n, "views", m.views);
  set_if(n, "prompt", m.prompt);
  set_if(n, "chunk", m.chunk);
  set_if(n, "steps", m.steps);
  set_if(n, "batch", m.batch);
  set_if(n, "dtype", m.dtype);
  if (!m.placement.empty()) {
    YAML::Node rules(YAML::NodeType::Sequence);
    for (const auto& p : m.placement) {
      YAML::Node r;
      r["stages"] = flow_list(p.stages);
      if (p.blocks) {
        YAML::Node b(YAML::NodeType::Sequence);
        b.push_back(p.blocks->first);
        b.push_back(p.blocks->second);
        r["blocks"] = b;
      }
      r["device"] = p.device;
      rules.push_back(r);
    }
    n["placement"] = rules;
  }
  if (!m.partition.name.empty()) n["partition"] = part_node(m.partition, file, where + ".partition");
  if (!m.dynamic_zone.name.empty())
    n["dynamic_zone"] = part_node(m.dynamic_zone, file, where + ".dynamic_zone");
  return n;
}

}  // namespace

ScenarioBuilder& ScenarioBuilder::description(std::string text) {
  description_ = std::move(text);
  return *this;
}
ScenarioBuilder& ScenarioBuilder::seed(uint64_t seed) {
  seed_ = seed;
  return *this;
}
ScenarioBuilder& ScenarioBuilder::drain_s(double seconds) {
  drain_s_ = seconds;
  return *this;
}
ScenarioBuilder& ScenarioBuilder::device(build::Device d) {
  devices_.push_back(std::move(d));
  return *this;
}
ScenarioBuilder& ScenarioBuilder::link(build::Link l) {
  links_.push_back(std::move(l));
  return *this;
}
ScenarioBuilder& ScenarioBuilder::model(build::Model m) {
  models_.push_back(std::move(m));
  return *this;
}
ScenarioBuilder& ScenarioBuilder::stream(build::Stream s) {
  streams_.push_back(std::move(s));
  return *this;
}
ScenarioBuilder& ScenarioBuilder::background(build::Background b) {
  background_.push_back(std::move(b));
  return *this;
}
ScenarioBuilder& ScenarioBuilder::queue(build::Part p) {
  queue_ = std::move(p);
  return *this;
}
ScenarioBuilder& ScenarioBuilder::pipeline(build::Part p) {
  pipeline_ = std::move(p);
  return *this;
}
ScenarioBuilder& ScenarioBuilder::cost_model(build::Part p) {
  cost_model_ = std::move(p);
  return *this;
}

YAML::Node ScenarioBuilder::document() const {
  const std::string file = "<" + name_ + ">";
  YAML::Node root(YAML::NodeType::Map);
  root["name"] = name_;
  set_if(root, "description", description_);
  set_if(root, "seed", seed_);
  set_if(root, "drain_s", drain_s_);

  YAML::Node hw(YAML::NodeType::Map);
  YAML::Node devices(YAML::NodeType::Sequence);
  for (const auto& d : devices_) devices.push_back(builder_device_node(d));
  hw["devices"] = devices;
  if (!links_.empty()) {
    YAML::Node links(YAML::NodeType::Sequence);
    for (const auto& l : links_) {
      YAML::Node n;
      set_if(n, "name", l.name);
      n["catalog"] = l.catalog;
      n["between"] = flow_list({l.a, l.b});
      set_if(n, "memory", l.memory);
      links.push_back(n);
    }
    hw["links"] = links;
  }
  root["hardware"] = hw;

  YAML::Node models(YAML::NodeType::Sequence);
  for (size_t i = 0; i < models_.size(); ++i) {
    models.push_back(builder_model_node(models_[i], file, "models[" + std::to_string(i) + "]"));
  }
  root["models"] = models;

  YAML::Node workload(YAML::NodeType::Sequence);
  for (const auto& s : streams_) {
    YAML::Node n;
    set_if(n, "name", s.name);
    n["model"] = s.model;
    if (s.load) n["load"] = *s.load;
    else n["rate_hz"] = s.rate_hz;
    n["duration_s"] = s.duration_s;
    set_if(n, "jitter_ms", s.jitter_ms);
    set_if(n, "deadline_ms", s.deadline_ms);
    set_if(n, "start_s", s.start_s);
    set_if(n, "count", s.count);
    set_if(n, "arrival", s.arrival);
    workload.push_back(n);
  }
  root["workload"] = workload;

  if (!background_.empty()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& b : background_) {
      YAML::Node n;
      n["device"] = b.device;
      set_if(n, "compute", b.compute);
      set_if(n, "memory", b.memory);
      set_if(n, "start_s", b.start_s);
      set_if(n, "end_s", b.end_s);
      list.push_back(n);
    }
    root["background"] = list;
  }

  YAML::Node policies(YAML::NodeType::Map);
  if (!queue_.name.empty()) policies["queue"] = part_node(queue_, file, "policies.queue");
  if (!pipeline_.name.empty()) policies["pipeline"] = part_node(pipeline_, file, "policies.pipeline");
  if (!cost_model_.name.empty())
    policies["cost_model"] = part_node(cost_model_, file, "policies.cost_model");
  if (policies.size() > 0) root["policies"] = policies;
  return root;
}

Scenario ScenarioBuilder::build(const std::string& catalog_dir, const std::string& cards_dir) const {
  ConfigNode root(document(), std::make_shared<const std::string>("<" + name_ + ">"), "");
  return load_scenario_node(root, catalog_dir, cards_dir);
}

std::string ScenarioBuilder::yaml() const {
  YAML::Emitter out;
  out << document();
  return std::string(out.c_str()) + "\n";
}

}  // namespace vlasim
