#include "python/tools.h"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "reports/leaderboard.h"
#include "reports/roofline.h"
#include "sim/engine/planner.h"

namespace py = pybind11;

namespace vlasim::python {
namespace {

const cli::Common& (*g_common)() = nullptr;

// The model the arguments name, as the commands' model options give it.
cli::ModelChoice model_choice(const std::string& what, const std::string& model, int views, int prompt, int chunk,
                              int steps, int batch, const std::string& dtype, const std::string& cost_model,
                              const std::string& stack) {
  cli::ModelChoice mc;
  mc.what = what;
  mc.model = model;
  mc.views = views, mc.prompt = prompt, mc.chunk = chunk, mc.steps = steps, mc.batch = batch;
  mc.dtype = dtype;
  mc.cost_model = cost_model;
  mc.stack = stack;
  return mc;
}

py::dict text_result(std::string csv, std::string markdown) {
  py::dict d;
  d["csv"] = std::move(csv);
  d["markdown"] = std::move(markdown);
  return d;
}

}  // namespace

void register_tools(py::module_& m, const cli::Common& (*common)()) {
  g_common = common;
  m.def(
      "leaderboard",
      [](const std::string& what, const std::string& model, const std::vector<std::string>& devices, double min_hz,
         double lifetime_years, double utilisation, double usd_per_kwh, double idle_fraction, int views, int prompt,
         int chunk, int steps, int batch, const std::string& dtype, const std::string& cost_model,
         const std::string& stack) {
        const cli::Common& c = g_common();
        const LeaderboardModel lm =
            cli::choose_model(c, model_choice(what, model, views, prompt, chunk, steps, batch, dtype, cost_model, stack));
        LeaderboardOptions o;
        o.devices = devices;
        o.min_hz = min_hz, o.lifetime_years = lifetime_years, o.utilisation = utilisation;
        o.usd_per_kwh = usd_per_kwh, o.idle_fraction = idle_fraction;
        Leaderboard lb;
        {
          py::gil_scoped_release nogil;
          lb = make_leaderboard(lm, c.catalog, c.cards, o, {});
        }
        return text_result(leaderboard_csv(lb), leaderboard_markdown(lb));
      },
      py::arg("what"), py::arg("model") = "", py::arg("devices") = std::vector<std::string>{},
      py::arg("min_hz") = LeaderboardOptions().min_hz, py::arg("lifetime_years") = LeaderboardOptions().lifetime_years,
      py::arg("utilisation") = LeaderboardOptions().utilisation, py::arg("usd_per_kwh") = LeaderboardOptions().usd_per_kwh,
      py::arg("idle_fraction") = LeaderboardOptions().idle_fraction, py::arg("views") = 0, py::arg("prompt") = -1,
      py::arg("chunk") = 0, py::arg("steps") = 0, py::arg("batch") = 0, py::arg("dtype") = "",
      py::arg("cost_model") = "", py::arg("stack") = "");
  m.def(
      "roofline",
      [](const std::string& what, const std::string& device, const std::string& model, int views, int prompt, int chunk,
         int steps, int batch, const std::string& dtype, const std::string& cost_model, const std::string& stack) {
        int index = 0;
        const Scenario s = cli::chosen_scenario(
            g_common(), model_choice(what, model, views, prompt, chunk, steps, batch, dtype, cost_model, stack), device,
            &index);
        const Plan p = plan_scenario(s);
        const RooflineReport r = make_roofline(s, p, index);
        return text_result(roofline_csv(r), roofline_markdown(r));
      },
      py::arg("what"), py::arg("device") = "", py::arg("model") = "", py::arg("views") = 0, py::arg("prompt") = -1,
      py::arg("chunk") = 0, py::arg("steps") = 0, py::arg("batch") = 0, py::arg("dtype") = "",
      py::arg("cost_model") = "", py::arg("stack") = "");
}

}  // namespace vlasim::python
