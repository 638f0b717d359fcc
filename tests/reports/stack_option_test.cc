// The software stack (issue 44) in the leaderboard, the roofline and validate-papers: a small
// model on a big GPU is host bound under eager PyTorch and not under a replayed graph, the
// reports say which stack priced them (and say nothing new without one), an unknown stack is
// refused naming the option, and a figure table's stack replaces the fitted host time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/builder.h"
#include "reports/leaderboard.h"
#include "reports/roofline.h"
#include "reports/validate_papers.h"
#include "scratch.h"
#include "sim/engine/planner.h"
#include "sim/hardware/hardware.h"

namespace vlasim {
namespace {

namespace fs = std::filesystem;

LeaderboardModel stack_tiny(const std::string& stack) {
  const ModelCard card = find_card(default_cards_dir(), "pi0_tiny", ConfigNode());
  LeaderboardModel m{"pi0_tiny", "pi0_tiny", card.defaults};
  m.stack = stack;
  return m;
}

Leaderboard stack_board(const std::string& stack) {
  LeaderboardOptions o;
  o.devices = {"h100-sxm"};
  return make_leaderboard(stack_tiny(stack), default_catalog_dir(), default_cards_dir(), o, nullptr);
}

std::string header_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(LeaderboardStack, EagerIsHostBoundAndSlowerThanAGraphForATinyModelOnAnH100) {
  const Leaderboard none = stack_board("none"), eager = stack_board("eager"), graph = stack_board("graph");
  for (const Leaderboard* lb : {&none, &eager, &graph}) {
    ASSERT_EQ(lb->rows.size(), 1u);
    ASSERT_TRUE(lb->rows[0].fits) << lb->rows[0].why;
  }
  const double e = eager.rows[0].latency_s, g = graph.rows[0].latency_s;
  EXPECT_GT(e, 1.5 * g) << "eager " << e << " s, graph " << g << " s";
  // The row is the plan of the same scenario with policies.stack set.
  const Scenario s = one_device_scenario(stack_tiny("eager"), "h100-sxm", default_catalog_dir(), default_cards_dir());
  EXPECT_EQ(s.stack.name, "eager");
  const Plan p = plan_scenario(s);
  EXPECT_DOUBLE_EQ(e, p.models[0].alone_seconds);
  EXPECT_EQ(one_device_scenario(stack_tiny("none"), "h100-sxm", default_catalog_dir(), default_cards_dir()).stack.name,
            "none");

  // The reports say which stack; without one the CSV has the columns stacks came before.
  EXPECT_EQ(header_line(leaderboard_csv(none)).find("stack"), std::string::npos);
  EXPECT_NE(header_line(leaderboard_csv(eager)).rfind(",stack"), std::string::npos);
  EXPECT_NE(leaderboard_csv(eager).find(",eager\n"), std::string::npos) << leaderboard_csv(eager);
  EXPECT_EQ(leaderboard_markdown(none).find("software stack"), std::string::npos);
  EXPECT_NE(leaderboard_markdown(graph).find("under the graph software stack"), std::string::npos);

  // Eager's roofline: its ops' times add up to the GPU segments' stack walls, mostly host time.
  const RooflineReport r = make_roofline(s, p, 0);
  EXPECT_EQ(r.stack, "eager");
  double walls = 0;
  for (const Segment& seg : p.models[0].segments)
    if (!seg.transfer) walls += seg.seconds - seg.overhead;
  EXPECT_NEAR(r.request_seconds, walls, 1e-9 * walls);
  bool overhead = false;
  for (const RooflineRow& x : r.rows) overhead = overhead || x.limiter == "overhead";
  EXPECT_TRUE(overhead) << "a host-bound step has operator classes limited by the stack's host time";
  EXPECT_NE(header_line(roofline_csv(r)).rfind(",stack"), std::string::npos);
  EXPECT_NE(roofline_markdown(r).find("eager software stack"), std::string::npos);
  EXPECT_EQ(header_line(roofline_csv(none.rows[0].roofline)).find("stack"), std::string::npos);
}

TEST(LeaderboardStack, AnUnknownStackIsRefusedNamingTheOptionAndTheValidNames) {
  try {
    stack_board("nope");
    ADD_FAILURE() << "stack 'nope' was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--stack"), std::string::npos) << what;
    EXPECT_NE(what.find("'nope'"), std::string::npos) << what;
    EXPECT_NE(what.find("valid names are: none, "), std::string::npos) << what;
    for (const char* n : {"eager", "graph", "compiled"}) EXPECT_NE(what.find(n), std::string::npos) << what;
  }
}

const std::string kStackPapers = std::string(VLASIM_SOURCE_DIR) + "/scenarios/papers/";

// One eager pi0 figure on the RTX 4090 (no passes, no graph capture), under `stack_line`.
std::string stack_table(const std::string& name, const std::string& stack_line) {
  const fs::path d = testing::scratch_dir("validate_stack_" + name);
  std::ofstream(d / "figures.yaml")
      << stack_line << "fit:\n  host_op_us: [0, 40]\n  eff_scale: [1]\n  prior: {host_op_us: 6, eff_scale: 1}\n"
      << "figures:\n  - id: eager\n    paper: a\n    what: eager\n    source: test\n    published: 100\n"
      << "    fit: true\n    eval:\n      scenario: " << kStackPapers << "realtime_pi0_passes_4090.yaml\n"
      << "      set: {models.0.passes: [], hardware.devices.0.graph_capture: false}\n      metric: alone_ms\n";
  return (d / "figures.yaml").string();
}

TEST(ValidatePapersStack, AStackPricesHostTimeSoHostOpUsIsNotFitted) {
  const FigureTable none = load_figure_table(stack_table("none", ""));
  EXPECT_EQ(none.stack, "none");
  const FigureTable eager = load_figure_table(stack_table("eager", "stack: eager\n"));
  EXPECT_EQ(eager.stack, "eager");
  FigureTable graph = eager;
  graph.stack = "graph";
  const Validation ve = validate_papers(eager, default_catalog_dir(), default_cards_dir(), {});
  const Validation vg = validate_papers(graph, default_catalog_dir(), default_cards_dir(), {});
  // Only the prior's host time is run: the stack, not host_op_us, prices the host.
  EXPECT_DOUBLE_EQ(ve.host_op_us, 6);
  EXPECT_TRUE(ve.rows[0].failed.empty()) << ve.rows[0].failed;
  EXPECT_EQ(ve.failed, 0u);
  EXPECT_GT(ve.rows[0].in_sample, vg.rows[0].in_sample) << "eager dispatch outlasts a graph replay";
  // The roofline column has no stack: the same either way.
  EXPECT_DOUBLE_EQ(ve.rows[0].roofline, vg.rows[0].roofline);
  EXPECT_NE(validation_markdown(eager, ve).find("under the eager software stack"), std::string::npos);
  const Validation vn = validate_papers(none, default_catalog_dir(), default_cards_dir(), {});
  EXPECT_EQ(validation_markdown(none, vn).find("software stack"), std::string::npos);

  try {
    load_figure_table(stack_table("bad", "stack: nope\n"));
    ADD_FAILURE() << "stack 'nope' was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("figures.yaml:1"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown stack 'nope'; valid names are: none, "), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace vlasim
