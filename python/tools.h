// The model tools from Python: the leaderboard (a model's time, energy and cost on catalog
// devices) and the roofline (per device, stage and operator class), made as `vlasim
// leaderboard` and `vlasim roofline` make them.
#pragma once

#include <pybind11/pybind11.h>

#include "cli/common.h"

namespace vlasim::python {

// Registers leaderboard(...) and roofline(...) on `m`; `common` gives the data folders.
// Each returns {"csv": the command's CSV text, "markdown": its Markdown}.
void register_tools(pybind11::module_& m, const cli::Common& (*common)());

}  // namespace vlasim::python
