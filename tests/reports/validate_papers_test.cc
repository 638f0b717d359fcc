// vlasim validate-papers: the fit set's parameters, leave-one-paper-out, the table's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "reports/validate_papers.h"
#include "scratch.h"
#include "sim/hardware/hardware.h"
#include "models/builder.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

const std::string kPapers = std::string(VLASIM_SOURCE_DIR) + "/scenarios/papers/";

// A figure table in a scratch folder, its scenarios named from the shipped papers folder.
std::string table(const std::string& name, const std::string& body) {
  const fs::path d = testing::scratch_dir("validate_" + name);
  std::ofstream(d / "figures.yaml") << body;
  return (d / "figures.yaml").string();
}

// pi0 on the RTX 4090: eager and unrewritten (host time shows), then captured (it does not).
std::string figures(double eager_published, double graph_published) {
  return "fit:\n  host_op_us: [0, 40]\n  eff_scale: [1]\n  prior: {host_op_us: 0, eff_scale: 1}\n"
         "figures:\n"
         "  - id: eager\n    paper: a\n    what: eager\n    source: test\n    published: " +
         std::to_string(eager_published) +
         "\n    fit: true\n    eval:\n      scenario: " + kPapers +
         "realtime_pi0_passes_4090.yaml\n      set: {models.0.passes: [], "
         "hardware.devices.0.graph_capture: false}\n      metric: alone_ms\n"
         "  - id: graph\n    paper: b\n    what: graph\n    source: test\n    published: " +
         std::to_string(graph_published) + "\n    fit: true\n    eval: {scenario: " + kPapers +
         "realtime_pi0_passes_4090.yaml, metric: alone_ms}\n"
         "  - id: later\n    paper: b\n    what: not built\n    source: test\n    published: 2\n"
         "    not_evaluated: not built\n";
}

TEST(ValidatePapers, EachPaperIsPredictedFromTheOtherPapersFitOnly) {
  // The model's values at each host time, from one-point grids.
  auto at = [&](double host) {
    std::string body = figures(100, 30);
    body.replace(body.find("[0, 40]"), 7, "[" + std::to_string(host) + "]");
    const Validation v = validate_papers(load_figure_table(table("at", body)), default_catalog_dir(),
                                         default_cards_dir(), {});
    return std::make_pair(v.rows[0].in_sample, v.rows[1].in_sample);
  };
  const auto [eager40, graph40] = at(40);
  const auto [eager0, graph0] = at(0);
  EXPECT_GT(eager40, eager0 * 1.2);            // host time shows in the eager run
  EXPECT_NEAR(graph40 / graph0, 1.0, 1e-12);   // and not under graph replay

  const FigureTable t = load_figure_table(table("fit", figures(eager40, graph40)));
  const Validation v = validate_papers(t, default_catalog_dir(), default_cards_dir(), {});
  // In sample the fit finds host 40: both figures exact.
  EXPECT_DOUBLE_EQ(v.host_op_us, 40);
  EXPECT_NEAR(v.rows[0].in_sample / eager40, 1.0, 1e-12);
  // Out of sample the eager figure (paper a) is predicted from paper b's figure alone, which
  // cannot tell host times apart: the fit goes to the prior (0) and misses.
  EXPECT_NEAR(v.rows[0].out_sample / eager0, 1.0, 1e-12);
  EXPECT_NE(v.rows[0].fold.find("host_op_us 0"), std::string::npos) << v.rows[0].fold;
  EXPECT_GT(v.out_worst, 0.15);
  EXPECT_NEAR(v.in_worst, 0.0, 1e-6);  // published values written with 6 decimals
  EXPECT_EQ(v.evaluated, 2u);
  const std::string md = validation_markdown(t, v);
  EXPECT_NE(md.find("not evaluated: not built"), std::string::npos);
  EXPECT_NE(md.find("not met"), std::string::npos);
  EXPECT_NE(validation_csv(v).find("later,b,2,,0,0"), std::string::npos) << validation_csv(v);
}

TEST(ValidatePapers, ABadTableIsRefusedWithFileLineAndKey) {
  struct Case {
    std::string body, key;
  } cases[] = {
      {"fit: {host_op_us: [0], eff_scale: [1]}\nfigures:\n  - {id: x, paper: p, what: w, source: s, "
       "published: 1, eval: {scenario: " + kPapers + "orion_native_l20.yaml, metric: speed}}\n",
       "metric"},
      {"fit: {host_op_us: [0], eff_scale: [1]}\nfigures:\n  - {id: x, paper: p, what: w, source: s, "
       "published: 1, eval: {scenario: nowhere.yaml, metric: alone_ms}}\n",
       "scenario"},
      {"fit: {host_op_us: [0], eff_scale: [1]}\nfigures:\n  - {id: x, paper: p, what: w, source: s, "
       "published: 1, fit: true, not_evaluated: why}\n",
       "fit"},
      {"fit: {host_op_us: [], eff_scale: [1]}\nfigures: []\n", "host_op_us"},
      {"fit: {host_op_us: [0], eff_scale: [1]}\nfigures:\n  - {id: x, paper: p, what: w, source: s, "
       "published: -3, not_evaluated: why}\n",
       "published"},
  };
  for (const Case& c : cases) {
    const std::string path = table("bad", c.body);
    try {
      load_figure_table(path);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const ConfigError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find(path + ":"), std::string::npos) << w;
      EXPECT_NE(w.find(c.key), std::string::npos) << w;
    }
  }
}

}  // namespace
}  // namespace vlasim
