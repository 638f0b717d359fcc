// Scheduler policies written in Python: a queue, batch or partition policy registered by name
// from Python joins queue_policies(), batch_policies() or partition_policies() and drives the
// simulator and the runtime as the C++ ones do, seeing the same UnitView (read-only copies).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace vlasim::python {

// Registers vlasim._vlasim's UnitView, WorkItem and PlacementSpec classes and
//   register_queue_policy(name, factory, description): `factory()` returns a callable
//     `pick(view) -> index into view.queue`;
//   register_batch_policy(name, factory, description, params): `factory(params)` returns an
//     object with form(view, lead, max_batch) -> indices into view.queue (lead first) or
//     (indices, size), and optionally sizes(max_batch), default_size, per_step and
//     step_overhead_seconds (scheduler/policy.h BatchPolicy; without them: dynamic's sizes,
//     1, False, 0). A list alone runs at the smallest of sizes(max_batch) that holds it;
//   register_partition_policy(name, factory, description, params): `factory(params)` returns an
//     object with rules_at(blocks, cut) -> [PlacementSpec], `stage` and `cut`
//     (scheduler/partition.h PartitionPolicy); a ValueError from rules_at is a cut that does
//     not fit (the scenario's ConfigError at its partition).
// `params` is the scenario's parameters of the policy as a dict of Python values; the
// registration's `params` lists (name, description, default) of those it takes. Each factory
// is called (with the GIL) for every policy the scenario loader or a run makes; the module
// keeps it alive (python/vlasim/__init__.py holds it). A built-in policy's name is refused.
void register_policies(pybind11::module_& m);

// The first exception a Python policy raised (or the IndexError, TypeError or ValueError of a
// return refused: a pick outside the queue, a batch with an item of another plan, ...) since
// the last call, and clears it; None when there is none. A run stops at such an error (the
// policy picks item 0 and runs the lead alone meanwhile; a partition's planning fails) and the
// caller raises it. Call with the GIL.
pybind11::object take_policy_error();

// Whether a Python policy has raised an error not yet taken (any thread, no GIL needed).
bool policy_error_pending();

}  // namespace vlasim::python
