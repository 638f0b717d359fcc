#include "python/policies.h"

#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

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

// What a Python queue policy is given: UnitView with copies of the waiting items (a view kept
// after the call stays valid).
struct PyUnitView {
  double now = 0;
  int unit = 0;
  double busy_fraction = 0;
  py::tuple queue;
};

// A queue policy whose pick is a Python callable. The callable is made and dropped with the GIL.
class PythonQueuePolicy : public QueuePolicy {
 public:
  PythonQueuePolicy(py::handle factory, std::string name) : name_(std::move(name)) {
    py::gil_scoped_acquire gil;
    try {
      pick_ = factory();
    } catch (py::error_already_set& e) {
      keep_error(e.value());
    }
  }
  ~PythonQueuePolicy() override {
    py::gil_scoped_acquire gil;
    pick_ = py::object();
  }

  size_t pick(const UnitView& view) override {
    if (g_error_pending) return 0;
    py::gil_scoped_acquire gil;
    try {
      PyUnitView v{view.now, view.unit, view.busy_fraction, py::tuple(view.queue.size())};
      for (size_t i = 0; i < view.queue.size(); ++i) v.queue[i] = py::cast(view.queue[i]);
      py::object got = pick_(v);
      if (!py::isinstance<py::int_>(got) || py::isinstance<py::bool_>(got))
        throw py::type_error("queue policy '" + name_ + "': pick returned " +
                             std::string(py::str(py::type::handle_of(got).attr("__name__"))) + ", not an int");
      const long long i = got.cast<long long>();
      if (i < 0 || static_cast<size_t>(i) >= view.queue.size())
        throw py::index_error("queue policy '" + name_ + "': pick returned " + std::to_string(i) + " for a queue of " +
                              std::to_string(view.queue.size()) + " items");
      return static_cast<size_t>(i);
    } catch (py::error_already_set& e) {
      keep_error(e.value());
    } catch (const py::builtin_exception& e) {
      e.set_error();
      keep_error(py::error_already_set().value());
    }
    return 0;
  }

 private:
  py::object pick_;
  std::string name_;
};

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
                         "what a queue policy sees when a unit is free (read-only): now (s), unit, "
                         "busy_fraction, queue (WorkItems in arrival order at the unit; not empty)")
      .def_readonly("now", &PyUnitView::now)
      .def_readonly("unit", &PyUnitView::unit)
      .def_readonly("busy_fraction", &PyUnitView::busy_fraction)
      .def_readonly("queue", &PyUnitView::queue);
  m.def(
      "register_queue_policy",
      [](const std::string& name, py::handle factory, const std::string& description) {
        for (const auto& e : queue_policies().entries())
          if (e.name == name && e.description.rfind("[python] ", 0) != 0)
            throw py::value_error("'" + name + "' is a built-in queue policy; give the Python one another name");
        add_queue_policy({name, "[python] " + description, {}, [factory, name](const Params&) {
                            return std::make_unique<PythonQueuePolicy>(factory, name);
                          }});
      },
      py::arg("name"), py::arg("factory"), py::arg("description") = "");
}

}  // namespace vlasim::python
