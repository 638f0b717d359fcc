// Reports: requests.csv keeps the clock's resolution late in a long run; dropped requests are counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "reports/report.h"
#include "scratch.h"

namespace vlasim {
namespace {

// The cells of line `n` (0: the header) of CSV file `path` (no quoted cells).
std::vector<std::string> csv_line(const std::string& path, int n) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i <= n; ++i) std::getline(in, line);
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
  return cells;
}

// A request's times, written and read back, are within the clock's tick of what it recorded
// (or a double's last place where that is coarser): a picosecond early in a run, a
// nanosecond (the tick past 9.2e6 s of span) near 1e7 s, 15 ns at the 1e8 s limit, so a
// segment of tens of nanoseconds there does not start and end at the same written time.
// (With 9 significant digits, times near 1e7 s were rounded to 10 ms.)
TEST(RequestsCsv, TimesKeepTheClocksResolutionLateInALongRun) {
  Scenario s;
  s.models.resize(1);
  s.models[0].name = "m";
  s.streams.resize(1);
  s.streams[0].name = "st";
  Plan p;
  p.models.resize(1);
  struct Case {
    double arrival, start, end, tick;
  };
  const std::vector<Case> cases = {
      {0.201141271123, 0.201141271123, 0.223927277456, 1e-12},
      {9999999.123456789, 9999999.123456814, 9999999.123456839, 1e-9},
      {99999990.000000015, 99999990.00000003, 99999990.00000006, 1e-9},
  };
  const std::string path = (testing::scratch_dir("requests_csv") / "requests.csv").string();
  RequestsCsv csv(s, p, path);
  uint64_t id = 0;
  for (const Case& c : cases) {
    RequestRecord q;
    q.id = id++;
    q.arrival = c.arrival;
    q.start = c.start;
    q.end = c.end;
    q.deadline = c.arrival + 0.1;
    q.stages_done = 1;
    q.stage_latency[0] = c.end - c.start;
    csv.row(q);
  }
  csv.close();
  const std::vector<std::string> head = csv_line(path, 0);
  ASSERT_EQ(head[4], "arrival_s");
  ASSERT_EQ(head[6], "end_s");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const Case& c = cases[i];
    const double tol = std::max(c.tick, std::nextafter(c.end, INFINITY) - c.end);
    const std::vector<std::string> row = csv_line(path, static_cast<int>(i) + 1);
    ASSERT_GE(row.size(), 11u);
    const double arrival = std::strtod(row[4].c_str(), nullptr), start = std::strtod(row[5].c_str(), nullptr),
                 end = std::strtod(row[6].c_str(), nullptr), latency = std::strtod(row[7].c_str(), nullptr),
                 deadline = std::strtod(row[8].c_str(), nullptr), vision = std::strtod(row[10].c_str(), nullptr);
    EXPECT_NEAR(arrival, c.arrival, tol);
    EXPECT_NEAR(start, c.start, tol);
    EXPECT_NEAR(end, c.end, tol);
    EXPECT_NEAR(deadline, c.arrival + 0.1, tol);
    EXPECT_NEAR(latency, c.end - c.arrival, 1e-12);
    EXPECT_NEAR(vision, c.end - c.start, 1e-12);
    EXPECT_LT(start, end);
  }
  // Short numbers stay as short as they were.
  EXPECT_EQ(csv_line(path, 1)[4], "0.201141271123");
}

// Requests dropped at a full queue (queue_limit) are counted in the report, its JSON and
// its summary; they count as requests (not met), not as finished or failed.
TEST(Report, CountsDroppedRequests) {
  Scenario s;
  s.name = "q";
  s.models.resize(1);
  s.models[0].name = "m";
  s.streams.resize(1);
  s.streams[0].name = "st";
  Plan p;
  p.models.resize(1);
  SimResult r;
  for (uint64_t i = 0; i < 5; ++i) {
    RequestRecord q;
    q.id = i;
    q.arrival = 0.1 * static_cast<double>(i);
    q.deadline = q.arrival + 1;
    if (i < 3) {
      q.start = q.arrival;
      q.end = q.arrival + 0.05;
    } else {
      q.dropped = true;
    }
    r.requests.push_back(q);
  }
  const Report rep = make_report(s, p, r, "simulate");
  EXPECT_EQ(rep.requests, 5u);
  EXPECT_EQ(rep.finished, 3u);
  EXPECT_EQ(rep.dropped, 2u);
  EXPECT_EQ(rep.failed, 0u);
  EXPECT_NEAR(rep.deadline_attainment, 0.6, 1e-12);
  EXPECT_NE(summary_text(rep).find("2 requests dropped"), std::string::npos) << summary_text(rep);
  const std::string path = (testing::scratch_dir("report_dropped") / "report.json").string();
  write_json(rep, path);
  std::ifstream in(path);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"dropped\": 2"), std::string::npos) << json;
  r.requests.resize(3);
  write_json(make_report(s, p, r, "simulate"), path);
  std::ifstream again(path);
  const std::string none((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(none.find("dropped"), std::string::npos);  // reports without drops are unchanged
}

}  // namespace
}  // namespace vlasim
