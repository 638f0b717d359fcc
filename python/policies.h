// Scheduler policies written in Python: a queue policy registered by name from Python joins
// queue_policies() and drives the simulator and the runtime as the C++ ones do, seeing the
// same UnitView (read-only copies).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace vlasim::python {

// Registers vlasim._vlasim's UnitView and WorkItem classes and register_queue_policy(name,
// factory, description): `factory()` is called (with the GIL) for every policy the scenario
// loader or a run makes, and returns a callable `pick(view) -> index into view.queue`. The
// module keeps `factory` alive (python/vlasim/__init__.py holds it).
void register_policies(pybind11::module_& m);

// The first exception a Python policy raised (or an IndexError or TypeError for a pick that
// is not an index into the queue) since the last call, and clears it; None when there is none.
// A run stops at such an error (the policy picks item 0 meanwhile) and the caller raises it.
// Call with the GIL.
pybind11::object take_policy_error();

// Whether a Python policy has raised an error not yet taken (any thread, no GIL needed).
bool policy_error_pending();

}  // namespace vlasim::python
