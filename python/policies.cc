#include "python/policies.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scheduler/partition.h"
#include "scheduler/policy.h"

namespace py = pybind11;

namespace vlasim::python {
namespace {

std::atomic<bool> g_error_pending{false};

// The pending error; touched only with the GIL. Released never (a module global that would
// otherwise be decremented after the interpreter is gone).
py::object& pending_error() {
  static auto* e = new py::object();
  return *e;
}

// Keeps the first error; later ones are the same run's consequences.
void keep_error(py::object e) {
  if (g_error_pending.exchange(true)) return;
  pending_error() = std::move(e);
}

// Runs `f` (with the GIL); a Python exception it raises, or a pybind11 builtin exception it
// throws (a return refused), is kept as the pending error. True when it ran through.
template <class F>
bool guarded(F&& f) {
  try {
    f();
    return true;
  } catch (py::error_already_set& e) {
    keep_error(e.value());
  } catch (const py::builtin_exception& e) {
    e.set_error();
    keep_error(py::error_already_set().value());
  }
  return false;
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// `got` as an integer; `what` names it in the TypeError for anything else (a bool included).
long long as_int(py::handle got, const std::string& what) {
  if (py::isinstance<py::bool_>(got) || !PyIndex_Check(got.ptr()))
    throw py::type_error(what + " is " + type_name(got) + ", not an int");
  PyObject* i = PyNumber_Index(got.ptr());
  if (!i) throw py::error_already_set();
  return py::reinterpret_steal<py::int_>(i).cast<long long>();
}

// The attribute `name` of `obj`, called when it is a method; None when obj has none.
py::object value_of(py::handle obj, const char* name) {
  if (!py::hasattr(obj, name)) return py::none();
  py::object v = obj.attr(name);
  return PyCallable_Check(v.ptr()) ? v() : v;
}

// What a Python policy is given: UnitView with copies of the waiting items (a view kept
// after the call stays valid).
struct PyUnitView {
  double now = 0;
  int unit = 0;
  double busy_fraction = 0;
  py::tuple queue;
};

PyUnitView py_view(const UnitView& view) {
  PyUnitView v{view.now, view.unit, view.busy_fraction, py::tuple(view.queue.size())};
  for (size_t i = 0; i < view.queue.size(); ++i) v.queue[i] = py::cast(view.queue[i]);
  return v;
}

// A scenario's parameters of a policy as Python values: a map's keys with their values (YAML
// scalars as int, float, bool or str; lists and maps as lists and dicts).
py::object yaml_value(const YAML::Node& n) {
  if (n.IsSequence()) {
    py::list out;
    for (const auto& x : n) out.append(yaml_value(x));
    return out;
  }
  if (n.IsMap()) {
    py::dict out;
    for (const auto& kv : n) out[py::str(kv.first.as<std::string>())] = yaml_value(kv.second);
    return out;
  }
  if (!n.IsScalar()) return py::none();
  const std::string text = n.Scalar();
  if (n.Tag() != "!") {  // not quoted
    long long i;
    double d;
    bool b;
    if (YAML::convert<long long>::decode(n, i)) return py::int_(i);
    if (YAML::convert<double>::decode(n, d)) return py::float_(d);
    if (YAML::convert<bool>::decode(n, b)) return py::bool_(b);
  }
  return py::str(text);
}

py::dict params_dict(const Params& p) {
  if (!p.node().is_map()) return py::dict();
  return yaml_value(p.node().raw()).cast<py::dict>();
}

// A queue policy whose pick is a Python callable. The callable is made and dropped with the GIL.
class PythonQueuePolicy : public QueuePolicy {
 public:
  PythonQueuePolicy(py::handle factory, std::string name) : name_(std::move(name)) {
    py::gil_scoped_acquire gil;
    guarded([&] { pick_ = factory(); });
  }
  ~PythonQueuePolicy() override {
    py::gil_scoped_acquire gil;
    pick_ = py::object();
  }

  size_t pick(const UnitView& view) override {
    if (g_error_pending) return 0;
    py::gil_scoped_acquire gil;
    size_t out = 0;
    guarded([&] {
      const long long i = as_int(pick_(py_view(view)), "queue policy '" + name_ + "': pick's return");
      if (i < 0 || static_cast<size_t>(i) >= view.queue.size())
        throw py::index_error("queue policy '" + name_ + "': pick returned " + std::to_string(i) + " for a queue of " +
                              std::to_string(view.queue.size()) + " items");
      out = static_cast<size_t>(i);
    });
    return out;
  }

 private:
  py::object pick_;
  std::string name_;
};

// The policy object `factory` makes from the scenario's parameters, and its method `method`
// (a TypeError naming the policy, `what`, when it has none).
std::pair<py::object, py::object> make_policy(py::handle factory, const Params& params, const char* method,
                                              const std::string& what) {
  py::object obj = factory(params_dict(params));
  if (!py::hasattr(obj, method)) throw py::type_error(what + type_name(obj) + " has no " + method + "()");
  py::object m = obj.attr(method);
  return {obj, m};
}

// A batch policy written in Python: an object made by the factory from the scenario's
// parameters, with form(view, lead, max_batch) and optionally sizes(max_batch), default_size,
// per_step and step_overhead_seconds (attributes or methods; read once when it is made).
class PythonBatchPolicy : public BatchPolicy {
 public:
  PythonBatchPolicy(py::handle factory, std::string name, const Params& params) : name_(std::move(name)) {
    py::gil_scoped_acquire gil;
    guarded([&] {
      std::tie(obj_, form_) = make_policy(factory, params, "form", what());
      has_sizes_ = py::hasattr(obj_, "sizes");
      if (py::object v = value_of(obj_, "default_size"); !v.is_none()) {
        const long long d = as_int(v, what() + "default_size");
        if (d < 1 || d > kMaxUnitBatch)
          throw py::value_error(what() + "default_size " + std::to_string(d) + " is outside 1.." +
                                std::to_string(kMaxUnitBatch));
        default_size_ = static_cast<int>(d);
      }
      if (py::object v = value_of(obj_, "per_step"); !v.is_none()) per_step_ = v.cast<bool>();
      if (py::object v = value_of(obj_, "step_overhead_seconds"); !v.is_none()) {
        step_overhead_ = v.cast<double>();
        if (!(step_overhead_ >= 0) || step_overhead_ > 1)
          throw py::value_error(what() + "step_overhead_seconds must be between 0 and 1");
      }
    });
  }
  ~PythonBatchPolicy() override {
    py::gil_scoped_acquire gil;
    obj_ = form_ = py::object();
  }

  BatchChoice form(const UnitView& view, size_t lead, int max_batch) const override {
    const std::vector<int> allowed = sizes(max_batch);
    BatchChoice out{{lead}, allowed.front()};  // what a failed policy runs meanwhile
    if (g_error_pending || !form_) return out;
    py::gil_scoped_acquire gil;
    guarded([&] { out = checked(form_(py_view(view), lead, max_batch), view, lead, max_batch, allowed); });
    return out;
  }

  // Python's sizes(max_batch), checked and kept per max_batch; dynamic's without one.
  std::vector<int> sizes(int max_batch) const override {
    if (!has_sizes_) return bucket_sizes(max_batch);
    py::gil_scoped_acquire gil;
    if (auto it = sizes_.find(max_batch); it != sizes_.end()) return it->second;
    std::vector<int> out;
    const bool ok = guarded([&] {
      const std::string w = what() + "sizes(" + std::to_string(max_batch) + ")";
      for (py::handle x : obj_.attr("sizes")(max_batch)) {
        const long long b = as_int(x, w + "'s item");
        if (b < 1 || b > max_batch || (!out.empty() && b <= out.back()))
          throw py::value_error(w + " must be increasing sizes from 1 to " + std::to_string(max_batch) + "; " +
                                std::to_string(b) + " is not");
        out.push_back(static_cast<int>(b));
      }
      if (out.empty()) throw py::value_error(w + " is empty");
    });
    if (!ok) out = bucket_sizes(max_batch);
    sizes_[max_batch] = out;
    return out;
  }
  int default_size() const override { return default_size_; }
  bool per_step() const override { return per_step_; }
  double step_overhead_seconds() const override { return step_overhead_; }

 private:
  std::string what() const { return "batch policy '" + name_ + "': "; }

  // form's return as a BatchChoice: a list of indices (lead first), or (indices, size).
  BatchChoice checked(const py::object& got, const UnitView& view, size_t lead, int max_batch,
                      const std::vector<int>& allowed) const {
    py::object items = got, size = py::none();
    if (py::isinstance<py::tuple>(got) && py::len(got) == 2) {
      const auto pair = py::reinterpret_borrow<py::tuple>(got);
      if (!PyIndex_Check(pair[0].ptr())) {
        items = py::object(pair[0]);
        size = py::object(pair[1]);
      }
    }
    if (!py::isinstance<py::sequence>(items) || py::isinstance<py::str>(items))
      throw py::type_error(what() + "form returned " + type_name(items) + ", not a list of indices");
    BatchChoice c;
    std::set<size_t> seen;
    const WorkItem& l = view.queue[lead];
    auto kind = [](const WorkItem& w) { return w.kind >= 0 ? w.kind : w.segment; };
    for (py::handle x : items) {
      const long long i = as_int(x, what() + "form's index");
      if (i < 0 || static_cast<size_t>(i) >= view.queue.size())
        throw py::index_error(what() + "form returned index " + std::to_string(i) + " for a queue of " +
                              std::to_string(view.queue.size()) + " items");
      const size_t k = static_cast<size_t>(i);
      if (!seen.insert(k).second) throw py::value_error(what() + "form returned index " + std::to_string(i) + " twice");
      if (c.items.empty() && k != lead)
        throw py::value_error(what() + "form's first index is " + std::to_string(i) + ", not the lead " +
                              std::to_string(lead));
      if (view.queue[k].plan != l.plan || kind(view.queue[k]) != kind(l))
        throw py::value_error(what() + "form put item " + std::to_string(i) +
                              " in the batch: not of the lead's plan and kind");
      c.items.push_back(k);
    }
    const int n = static_cast<int>(c.items.size());
    if (n == 0) throw py::value_error(what() + "form returned no index (the lead comes first)");
    if (n > max_batch)
      throw py::value_error(what() + "form returned " + std::to_string(n) + " items; the unit runs at most " +
                            std::to_string(max_batch));
    auto holding = std::lower_bound(allowed.begin(), allowed.end(), n);
    if (size.is_none()) {
      if (holding == allowed.end())
        throw py::value_error(what() + "no size of sizes(" + std::to_string(max_batch) + ") holds " +
                              std::to_string(n) + " items");
      c.size = *holding;
      return c;
    }
    const long long s = as_int(size, what() + "form's size");
    if (s < n || std::find(allowed.begin(), allowed.end(), s) == allowed.end())
      throw py::value_error(what() + "form's size " + std::to_string(s) + " is not one of sizes(" +
                            std::to_string(max_batch) + ") at least its " + std::to_string(n) + " items");
    c.size = static_cast<int>(s);
    return c;
  }

  std::string name_;
  py::object obj_, form_;
  bool has_sizes_ = false, per_step_ = false;
  int default_size_ = 1;
  double step_overhead_ = 0;
  mutable std::map<int, std::vector<int>> sizes_;  // touched with the GIL only
};

Stage stage_of(py::handle v, const std::string& what) {
  Stage st;
  if (!py::isinstance<py::str>(v) || !parse_stage(v.cast<std::string>(), &st))
    throw py::value_error(what + " is " + std::string(py::repr(v)) +
                          ", not a stage name (vision, prefix, action, decode, head)");
  return st;
}

// A partition policy written in Python: an object made by the factory from the scenario's
// parameters, with rules_at(blocks, cut) and `stage` and `cut` (attributes or methods; read
// once when it is made). A ValueError from rules_at is the cut not fitting (the scenario's
// ConfigError); any other exception is kept and raised by the call that planned it.
class PythonPartitionPolicy : public PartitionPolicy {
 public:
  PythonPartitionPolicy(py::handle factory, std::string name, const Params& params) : name_(std::move(name)) {
    py::gil_scoped_acquire gil;
    guarded([&] {
      std::tie(obj_, rules_at_) = make_policy(factory, params, "rules_at", what());
      stage_ = stage_of(value_of(obj_, "stage"), what() + "stage");
      const long long c = as_int(value_of(obj_, "cut"), what() + "cut");
      if (c < 0) throw py::value_error(what() + "cut must not be negative");
      cut_ = static_cast<int>(c);
    });
  }
  ~PythonPartitionPolicy() override {
    py::gil_scoped_acquire gil;
    obj_ = rules_at_ = py::object();
  }

  std::vector<PlacementSpec> rules_at(int blocks, int cut) const override {
    if (g_error_pending || !rules_at_) throw std::invalid_argument(what() + "it raised an error");
    py::gil_scoped_acquire gil;
    std::vector<PlacementSpec> out;
    std::string refused;
    const bool ok = guarded([&] {
      py::object got;
      try {
        got = rules_at_(blocks, cut);
      } catch (py::error_already_set& e) {
        if (!e.matches(PyExc_ValueError)) throw;
        refused = std::string(py::str(e.value()));
        return;
      }
      if (!py::isinstance<py::sequence>(got))
        throw py::type_error(what() + "rules_at returned " + type_name(got) + ", not a list of PlacementSpec");
      for (py::handle x : got) {
        if (!py::isinstance<PlacementSpec>(x))
          throw py::type_error(what() + "rules_at returned a " + type_name(x) + " among its rules, not a PlacementSpec");
        out.push_back(x.cast<PlacementSpec>());
      }
    });
    if (!refused.empty()) throw std::invalid_argument(refused);
    if (!ok) throw std::invalid_argument(what() + "rules_at raised an error");
    return out;
  }
  int cut() const override { return cut_; }
  Stage stage() const override { return stage_; }

 private:
  std::string what() const { return "partition policy '" + name_ + "': "; }

  std::string name_;
  py::object obj_, rules_at_;
  Stage stage_ = Stage::Prefix;
  int cut_ = 0;
};

// The parameters a Python policy declares: (name, description, default) triples.
std::vector<ParamSpec> param_specs(const std::vector<std::tuple<std::string, std::string, std::string>>& params) {
  std::vector<ParamSpec> out;
  for (const auto& [name, description, fallback] : params) out.push_back({name, description, fallback});
  return out;
}

// Refuses a Python part named like one of `reg`'s built-ins.
template <class R>
void refuse_built_in(const R& reg, const std::string& name) {
  for (const auto& e : reg.entries())
    if (e.name == name && e.description.rfind("[python] ", 0) != 0)
      throw py::value_error("'" + name + "' is a built-in " + reg.family() + "; give the Python one another name");
}

using ParamList = std::vector<std::tuple<std::string, std::string, std::string>>;

void register_classes(py::module_& m) {
  py::class_<WorkItem>(m, "WorkItem", "a segment of a request waiting for a unit (read-only)")
      .def_readonly("request", &WorkItem::request)
      .def_readonly("model", &WorkItem::model)
      .def_readonly("plan", &WorkItem::plan)
      .def_readonly("stream", &WorkItem::stream)
      .def_readonly("segment", &WorkItem::segment)
      .def_readonly("kind", &WorkItem::kind)
      .def_readonly("arrival", &WorkItem::arrival)
      .def_readonly("ready", &WorkItem::ready)
      .def_readonly("deadline", &WorkItem::deadline)
      .def_readonly("estimate", &WorkItem::estimate)
      .def_readonly("batch", &WorkItem::batch)
      .def_readonly("sms", &WorkItem::sms);
  py::class_<PyUnitView>(m, "UnitView",
                         "what a queue or batch policy sees when a unit is free (read-only): now (s), unit, "
                         "busy_fraction, queue (WorkItems in arrival order at the unit; not empty)")
      .def_readonly("now", &PyUnitView::now)
      .def_readonly("unit", &PyUnitView::unit)
      .def_readonly("busy_fraction", &PyUnitView::busy_fraction)
      .def_readonly("queue", &PyUnitView::queue);
  py::class_<PlacementSpec>(m, "PlacementSpec",
                            "a partition policy's placement rule: `stage` (blocks first_block..last_block, or all "
                            "when first_block < 0) runs on `device` (\"dev\" or \"dev.unit\")")
      .def(py::init([](const std::string& stage, const std::string& device, int first_block, int last_block) {
             return PlacementSpec{stage_of(py::str(stage), "PlacementSpec's stage"), first_block, last_block, device};
           }),
           py::arg("stage"), py::arg("device"), py::arg("first_block") = -1, py::arg("last_block") = -1)
      .def_property_readonly("stage", [](const PlacementSpec& p) { return std::string(to_string(p.stage)); })
      .def_readonly("device", &PlacementSpec::device)
      .def_readonly("first_block", &PlacementSpec::first_block)
      .def_readonly("last_block", &PlacementSpec::last_block)
      .def("__eq__", [](const PlacementSpec& a, const PlacementSpec& b) {
        return a.stage == b.stage && a.first_block == b.first_block && a.last_block == b.last_block &&
               a.device == b.device;
      })
      .def("__repr__", [](const PlacementSpec& p) {
        return "PlacementSpec(" + std::string(to_string(p.stage)) + ", " + p.device + ", " +
               std::to_string(p.first_block) + ", " + std::to_string(p.last_block) + ")";
      });
}

}  // namespace

py::object take_policy_error() {
  if (!g_error_pending) return py::none();
  py::object e = std::move(pending_error());
  pending_error() = py::object();
  g_error_pending = false;
  return e;
}

bool policy_error_pending() { return g_error_pending; }

void register_policies(py::module_& m) {
  register_classes(m);
  m.def(
      "register_queue_policy",
      [](const std::string& name, py::handle factory, const std::string& description) {
        refuse_built_in(queue_policies(), name);
        add_queue_policy({name, "[python] " + description, {}, [factory, name](const Params&) {
                            return std::make_unique<PythonQueuePolicy>(factory, name);
                          }});
      },
      py::arg("name"), py::arg("factory"), py::arg("description") = "");
  m.def(
      "register_batch_policy",
      [](const std::string& name, py::handle factory, const std::string& description, const ParamList& params) {
        refuse_built_in(batch_policies(), name);
        add_batch_policy({name, "[python] " + description, param_specs(params), [factory, name](const Params& p) {
                            return std::make_unique<PythonBatchPolicy>(factory, name, p);
                          }});
      },
      py::arg("name"), py::arg("factory"), py::arg("description") = "", py::arg("params") = ParamList{});
  m.def(
      "register_partition_policy",
      [](const std::string& name, py::handle factory, const std::string& description, const ParamList& params) {
        refuse_built_in(partition_policies(), name);
        add_partition_policy({name, "[python] " + description, param_specs(params),
                              [factory, name](const Params& p) -> std::unique_ptr<PartitionPolicy> {
                                return std::make_unique<PythonPartitionPolicy>(factory, name, p);
                              }});
      },
      py::arg("name"), py::arg("factory"), py::arg("description") = "", py::arg("params") = ParamList{});
}

}  // namespace vlasim::python
