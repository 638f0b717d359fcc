// vlasim._vlasim, the compiled half of the Python module (python/vlasim/__init__.py is the
// other): scenarios read from a file or YAML text and edited by key, simulated, executed,
// compared and calibrated as the commands do with the GIL released (Ctrl-C stops each with
// what ran), the registries with their parameters, a card's operator graph. A ConfigError
// becomes vlasim.ConfigError with .file, .line and .key.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <algorithm>

#include "cli/commands.h"
#include "cli/common.h"
#include "executors/executor_registry.h"
#include "executors/runtime/runtime.h"
#include "models/builder.h"
#include "models/passes/passes.h"
#include "python/policies.h"
#include "python/tools.h"
#include "reports/compare.h"
#include "reports/report.h"
#include "reports/sweep.h"
#include "scenarios/workload.h"
#include "scheduler/fleet/traffic_controller.h"
#include "scheduler/partition.h"
#include "scheduler/policy.h"
#include "scheduler/zone.h"
#include "sim/costs/cost_models.h"
#include "sim/costs/gpu_sharing.h"
#include "sim/costs/stack_model.h"

namespace py = pybind11;

namespace vlasim::python {
namespace {

// The data folders and profile every call uses (vlasim.configure), as the command's global
// options are.
cli::Common& common() {
  static cli::Common c;
  return c;
}
const cli::Common& common_view() { return common(); }

// One simulation at a time in this process (the SystemC kernel is the process's).
std::mutex& simulate_mutex() {
  static std::mutex m;
  return m;
}

// Raises what a Python policy raised, if it did.
void raise_policy_error() {
  py::object e = take_policy_error();
  if (e.is_none()) return;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
  throw py::error_already_set();
}

// A scenario document as Python holds it: checked whenever it is made or changed.
struct PyScenario {
  YAML::Node doc;
  std::string file;  // the file it was read from, or the name given to text ("<string>")
  bool from_text = false;  // then the report's "file" is "" (reports/report.h)

  ConfigNode root() const { return ConfigNode(doc, std::make_shared<const std::string>(file), ""); }
  // The scenario as `vlasim simulate` would run it (quiet); `on_this_host` as `vlasim compare`
  // does (a profile made on another CPU ISA refused). An error a Python policy raised meanwhile
  // is raised in place of the ConfigError it caused.
  Scenario parsed(bool on_this_host = false) const {
    take_policy_error();  // a failed run's, raised already
    try {
      Scenario s = load_scenario_node(root(), common().catalog, common().cards);
      raise_policy_error();
      cli::ready_for(common(), s, on_this_host, true);
      if (from_text) s.file.clear();
      return s;
    } catch (const ConfigError&) {
      raise_policy_error();
      throw;
    }
  }
};

// `sc` parsed, then planned as the commands do (seed < 0: the scenario's own). An error a
// Python policy raised while planning (a partition's rules, a batch policy's sizes) is raised
// in place of the ConfigError it caused.
cli::Prepared prepared(const PyScenario& sc, long long seed, bool on_this_host = false) {
  cli::Prepared pr;
  pr.s = sc.parsed(on_this_host);
  try {
    cli::plan_prepared(pr, seed, true);
  } catch (const ConfigError&) {
    raise_policy_error();
    throw;
  }
  raise_policy_error();
  return pr;
}

PyScenario scenario_from_file(const std::string& path) {
  PyScenario sc{ConfigNode::load_file(path).raw(), path};
  sc.parsed();
  return sc;
}

PyScenario scenario_from_text(const std::string& text, const std::string& name) {
  ConfigNode n = ConfigNode::load_string(text, name);
  if (!n.defined()) throw ConfigError(name, 0, 0, "", "scenario is empty");
  PyScenario sc{n.raw(), name, true};
  sc.parsed();
  return sc;
}

// Sets `key` (a dotted path, numbers index lists) to `value`; a scenario the change breaks is
// refused with its ConfigError and left as it was.
void scenario_set(PyScenario& sc, const std::string& key, const std::string& value) {
  YAML::Node before = YAML::Clone(sc.doc);
  try {
    set_scenario_key(sc.doc, key, value, sc.file);
    sc.parsed();
  } catch (...) {
    sc.doc = before;
    throw;
  }
}

std::string scenario_yaml(const PyScenario& sc) {
  YAML::Emitter out;
  out << sc.doc;
  return std::string(out.c_str()) + "\n";
}

// What a simulation hands back to Python: report.json's and requests.csv's text, why it
// stopped early ("" when it ran to the end) and whether Ctrl-C stopped it.
struct SimOutcome {
  std::string report_json, requests_csv, stopped;
  bool interrupted = false;
  // A real run's: requests whose executor failed, the first such error, each unit's device.
  size_t failed = 0;
  std::string first_error;
  std::vector<std::string> devices;
};

// The `should_stop` of a run from Python: a pending KeyboardInterrupt (Ctrl-C) or the wall
// limit stops it. Another exception a signal handler raises is kept and raised after the run.
struct PyStop {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double max_wall_s = 0;
  bool interrupted = false;
  std::unique_ptr<py::error_already_set> error;

  std::string operator()() {
    if (!interrupted && !error) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
          PyErr_Clear();
          interrupted = true;
        } else {
          error = std::make_unique<py::error_already_set>();
        }
      }
    }
    if (interrupted) return "KeyboardInterrupt";
    if (policy_error_pending()) return "a Python policy's error";
    if (error) return "a Python exception";
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (max_wall_s > 0 && wall > max_wall_s) return "max_wall_s " + cli::fmt_g(max_wall_s) + " reached";
    return "";
  }

  // After the run (with the GIL): raises what a signal handler or a Python policy raised;
  // else whether Ctrl-C stopped it.
  bool finish() {
    if (error) throw std::move(*error);
    raise_policy_error();
    return interrupted;
  }
};

// A PyStop of limit max_wall_s (0: none), and the stop hook that asks it.
std::pair<std::shared_ptr<PyStop>, std::function<std::string()>> py_stop(double max_wall_s = 0) {
  auto stop = std::make_shared<PyStop>();
  stop->max_wall_s = max_wall_s;
  return {stop, [stop]() { return (*stop)(); }};
}

// Simulates `sc` as `vlasim simulate` does (seed < 0: the scenario's own), without the GIL;
// requests.csv's text only `with_requests`.
SimOutcome run_simulation(const PyScenario& sc, long long seed, double max_wall_s, size_t trace_limit,
                          bool with_requests) {
  cli::Prepared pr = prepared(sc, seed);
  SimOptions opt;
  opt.trace_limit = trace_limit;
  auto [stop, hook] = py_stop(max_wall_s);
  opt.should_stop = hook;
  std::unique_ptr<LiveController> controller;
  if (pr.s.controller.on()) {
    controller = std::make_unique<LiveController>(pr.s);
    opt.router = controller.get();
  }
  SimOutcome out;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> one_at_a_time(simulate_mutex());
    const SimResult r = simulate(pr.s, pr.plan, opt);
    out.report_json = report_json_text(make_report(pr.s, pr.plan, r, "simulate"));
    if (with_requests) out.requests_csv = requests_csv_text(pr.s, pr.plan, r);
    out.stopped = r.stopped;
  }
  out.interrupted = stop->finish();
  return out;
}

// Runs `sc` for real on this machine's executors as `vlasim execute` does (seed < 0: the
// scenario's own), without the GIL; Ctrl-C and max_wall_s stop it with a partial report.
SimOutcome run_execution(const PyScenario& sc, long long seed, const std::string& executor, int warmup,
                         double max_wall_s, bool with_requests) {
  cli::Prepared pr = prepared(sc, seed);
  ExecuteOptions opt;
  opt.executor = executor;
  opt.warmup = warmup;
  auto [stop, hook] = py_stop(max_wall_s);
  opt.should_stop = hook;
  SimOutcome out;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> one_at_a_time(simulate_mutex());
    const ExecResult r = execute(pr.s, pr.plan, opt);
    out.report_json = report_json_text(make_report(pr.s, pr.plan, r.result, "execute"));
    if (with_requests) out.requests_csv = requests_csv_text(pr.s, pr.plan, r.result);
    out.stopped = r.result.stopped;
    out.failed = r.failed;
    out.first_error = r.first_error;
    out.devices = r.devices;
  }
  out.interrupted = stop->finish();
  return out;
}

// What a comparison hands back: the text files `vlasim compare -o` writes, by path
// (cli::compare_files; compare --trace: compare.json, compare.md and simulate/'s report.json
// and requests.csv), and whether Ctrl-C stopped it.
struct CompareOutcome {
  std::map<std::string, std::string> files;
  bool interrupted = false;
};

// `vlasim compare`'s core (cli::compare_for_real): `sc` simulated, then run for real here, and
// the two compared (margin: TOST's on the ratio of mean latencies), without the GIL.
CompareOutcome run_comparison(const PyScenario& sc, long long seed, const std::string& executor, int warmup,
                              double margin, double max_wall_s) {
  cli::Prepared pr = prepared(sc, seed, true);
  ExecuteOptions eo;
  eo.executor = executor;
  eo.warmup = warmup;
  auto [stop, hook] = py_stop(max_wall_s);
  eo.should_stop = hook;
  CompareOutcome out;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> one_at_a_time(simulate_mutex());
    const cli::RealComparison rc = cli::compare_for_real(pr, SimOptions(), margin, [&] { return execute(pr.s, pr.plan, eo); });
    out.files = cli::compare_files(pr, rc);
  }
  out.interrupted = stop->finish();
  return out;
}

// `vlasim compare --trace`'s comparison (cli::compare_with_trace): `sc` predicted beside a
// PyTorch profiler trace's inferences, without the GIL; Ctrl-C stops the prediction, and the
// comparison is of what it ran.
CompareOutcome run_trace_comparison(const PyScenario& sc, const std::string& trace, const std::string& inference,
                                    double margin, long long seed) {
  cli::Prepared pr = prepared(sc, seed);
  SimOptions so;
  auto [stop, hook] = py_stop();
  so.should_stop = hook;
  CompareOutcome out;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> one_at_a_time(simulate_mutex());
    const cli::TraceComparison tc = cli::compare_with_trace(pr, trace, inference, margin, so);
    out.files["compare.json"] = compare_json_text(tc.cmp);
    out.files["compare.md"] = tc.markdown;
    out.files["simulate/report.json"] = report_json_text(make_report(pr.s, pr.plan, tc.predicted, "simulate"));
    out.files["simulate/requests.csv"] = requests_csv_text(pr.s, pr.plan, tc.predicted);
  }
  out.interrupted = stop->finish();
  return out;
}

// Runs `vlasim calibrate ARGS` in this process, through the command's own options and code,
// without the GIL; returns its exit status and whether Ctrl-C ended it early (between
// measurements: the profile written holds what was measured). A bad option raises ConfigError
// (key "calibrate").
std::pair<int, bool> run_calibrate_command(const std::vector<std::string>& args) {
  CLI::App app{"vlasim"};
  app.require_subcommand(1);
  const cli::Command cmd = cli::add_calibrate(app);
  std::vector<std::string> argv = {"calibrate"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  try {
    app.parse(argv);
  } catch (const CLI::ParseError& e) {
    throw ConfigError("<argument>", 0, 0, "calibrate", e.what());
  }
  cli::Common c = common();
  auto [stop, hook] = py_stop();
  c.should_stop = hook;
  int status = 0;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> one_at_a_time(simulate_mutex());
    status = cmd.run(c);
  }
  return {status, stop->finish()};
}

// One registry as a list of {name, description, params: [{name, default, description}]}.
template <class R>
py::list registry_list(const R& reg) {
  py::list out;
  for (const auto& e : reg.entries()) {
    py::list params;
    for (const auto& p : e.params)
      params.append(py::dict(py::arg("name") = p.name,
                             py::arg("default") = p.default_value.empty() ? py::object(py::none())
                                                                          : py::object(py::str(p.default_value)),
                             py::arg("description") = p.description));
    out.append(py::dict(py::arg("name") = e.name, py::arg("description") = e.description,
                        py::arg("params") = params));
  }
  return out;
}

// Every registry by its family name (`vlasim list`'s names), and the cards and graph passes.
py::dict registries() {
  py::dict d;
  d["cost_models"] = registry_list(cost_models());
  d["stacks"] = registry_list(stack_registry());
  d["gpu_sharing"] = registry_list(gpu_sharing_models());
  d["queue_policies"] = registry_list(queue_policies());
  d["pipeline_policies"] = registry_list(pipeline_policies());
  d["batching_policies"] = registry_list(batch_policies());
  d["partition_policies"] = registry_list(partition_policies());
  d["zone_policies"] = registry_list(zone_policies());
  d["executors"] = registry_list(executor_registry());
  d["workloads"] = registry_list(workloads());
  py::list passes;
  for (const GraphPass& p : graph_passes())
    passes.append(py::dict(py::arg("name") = p.name, py::arg("description") = p.description,
                           py::arg("kind") = p.builder ? "builder" : "rewrite"));
  d["passes"] = passes;
  d["cards"] = card_names(common().cards);
  return d;
}

// The shape `vlasim graph` builds: the card's defaults with the given overrides (0 or -1 for
// prompt: the default).
RunShape graph_shape(const ModelCard& card, int views, int prompt, int chunk, int steps, int batch,
                     const std::string& dtype) {
  RunShape shape = card.defaults;
  if (views > 0) shape.views = views;
  if (prompt >= 0) shape.prompt = prompt;
  if (chunk > 0) shape.chunk = chunk;
  if (steps > 0) shape.steps = steps;
  if (batch > 0) shape.batch = batch;
  if (!dtype.empty() && !parse_dtype(dtype, &shape.dtype))
    throw ConfigError("<argument>", 0, 0, "dtype", "unknown dtype '" + dtype + "'; valid names are: fp32, bf16, fp16, int8");
  return shape;
}

// A card's operator graph: totals and one dict of columns per op (shapes, FLOPs, bytes).
py::dict card_graph(const std::string& card_name, int views, int prompt, int chunk, int steps, int batch,
                    const std::string& dtype) {
  ConfigNode where(YAML::Node(card_name), std::make_shared<const std::string>("<argument>"), "card");
  const ModelCard card = find_card(common().cards, card_name, where);
  const RunShape shape = graph_shape(card, views, prompt, chunk, steps, batch, dtype);
  const OpGraph g = build_graph(card, shape);
  std::vector<std::string> names, kinds, fns, stages, components;
  std::vector<long long> step, block, m, n, k, heads, q_len, kv_len, rows, width;
  std::vector<double> flops, bytes_read, bytes_written, weight_bytes;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(static_cast<int>(i));
    names.push_back(o.name);
    kinds.push_back(to_string(o.kind));
    fns.push_back(to_string(o.fn));
    stages.push_back(to_string(o.stage));
    components.push_back(o.component);
    step.push_back(o.step), block.push_back(o.block);
    m.push_back(o.m), n.push_back(o.n), k.push_back(o.k);
    heads.push_back(o.heads), q_len.push_back(o.q_len), kv_len.push_back(o.kv_len);
    rows.push_back(o.rows), width.push_back(o.width);
    flops.push_back(o.flops), bytes_read.push_back(o.bytes_read), bytes_written.push_back(o.bytes_written);
    weight_bytes.push_back(o.weight_bytes);
  }
  py::dict ops;
  ops["name"] = names, ops["kind"] = kinds, ops["fn"] = fns, ops["stage"] = stages, ops["component"] = components;
  ops["step"] = step, ops["block"] = block, ops["m"] = m, ops["n"] = n, ops["k"] = k;
  ops["heads"] = heads, ops["q_len"] = q_len, ops["kv_len"] = kv_len, ops["rows"] = rows, ops["width"] = width;
  ops["flops"] = flops, ops["bytes_read"] = bytes_read, ops["bytes_written"] = bytes_written;
  ops["weight_bytes"] = weight_bytes;
  py::dict out;
  out["card"] = card.name;
  out["dtype"] = to_string(shape.dtype);
  out["flops"] = g.flops();
  out["param_bytes"] = g.param_bytes();
  out["prefix_tokens"] = static_cast<long long>(g.prefix_tokens);
  out["suffix_tokens"] = static_cast<long long>(g.suffix_tokens);
  out["ops"] = ops;
  return out;
}

void configure(const std::string& catalog, const std::string& cards, const std::string& profile) {
  if (!catalog.empty()) common().catalog = catalog;
  if (!cards.empty()) common().cards = cards;
  common().profile = profile;
}

// Raises ConfigError as the Python class `cls`, with the file, line and key as attributes.
void register_config_error(py::module_& m) {
  static py::handle cls;
  cls = py::object(m.attr("ConfigError")).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      py::object err = py::reinterpret_borrow<py::object>(cls)(e.what());
      err.attr("file") = e.file();
      err.attr("line") = e.line();
      err.attr("key") = e.key();
      err.attr("message") = e.message();
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });
}

}  // namespace

PYBIND11_MODULE(_vlasim, m) {
  m.doc() = "vlasim's compiled core; import vlasim, not this";
  m.attr("ConfigError") = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("vlasim.ConfigError",
                                "a bad scenario, card or argument: .file, .line (0: none), .key, .message",
                                PyExc_ValueError, nullptr));
  register_config_error(m);
  py::class_<PyScenario>(m, "Scenario")
      .def_property_readonly("file", [](const PyScenario& s) { return s.file; })
      .def_property_readonly("name", [](const PyScenario& s) { return s.parsed().name; })
      .def("set", &scenario_set, py::arg("key"), py::arg("value"))
      .def("yaml", &scenario_yaml)
      .def("copy", [](const PyScenario& s) { return PyScenario{YAML::Clone(s.doc), s.file, s.from_text}; });
  m.def("load_file", &scenario_from_file, py::arg("path"));
  m.def("load_text", &scenario_from_text, py::arg("text"), py::arg("name"));
  py::class_<SimOutcome>(m, "SimOutcome")
      .def_readonly("report_json", &SimOutcome::report_json)
      .def_readonly("requests_csv", &SimOutcome::requests_csv)
      .def_readonly("stopped", &SimOutcome::stopped)
      .def_readonly("interrupted", &SimOutcome::interrupted)
      .def_readonly("failed", &SimOutcome::failed)
      .def_readonly("first_error", &SimOutcome::first_error)
      .def_readonly("devices", &SimOutcome::devices);
  m.def("simulate", &run_simulation, py::arg("scenario"), py::arg("seed") = -1, py::arg("max_wall_s") = 0.0,
        py::arg("trace_limit") = size_t{20000}, py::arg("with_requests") = true);
  m.def("execute", &run_execution, py::arg("scenario"), py::arg("seed") = -1, py::arg("executor") = "onednn",
        py::arg("warmup") = 2, py::arg("max_wall_s") = 0.0, py::arg("with_requests") = true);
  py::class_<CompareOutcome>(m, "CompareOutcome")
      .def_readonly("files", &CompareOutcome::files)
      .def_readonly("interrupted", &CompareOutcome::interrupted);
  m.def("compare", &run_comparison, py::arg("scenario"), py::arg("seed") = -1, py::arg("executor") = "onednn",
        py::arg("warmup") = 2, py::arg("margin") = 0.10, py::arg("max_wall_s") = 0.0);
  m.def("compare_trace", &run_trace_comparison, py::arg("scenario"), py::arg("trace"), py::arg("inference") = "",
        py::arg("margin") = 0.10, py::arg("seed") = -1);
  m.def("calibrate_command", &run_calibrate_command, py::arg("args"));
  m.def("registries", &registries);
  m.def("graph", &card_graph, py::arg("card"), py::arg("views") = 0, py::arg("prompt") = -1, py::arg("chunk") = 0,
        py::arg("steps") = 0, py::arg("batch") = 0, py::arg("dtype") = "");
  m.def("configure", &configure, py::arg("catalog") = "", py::arg("cards") = "", py::arg("profile") = "");
  m.def("data_dirs", []() { return py::make_tuple(common().catalog, common().cards, common().profile); });
  register_policies(m);
  register_tools(m, &common_view);
}

}  // namespace vlasim::python
