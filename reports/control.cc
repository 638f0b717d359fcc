#include "reports/control.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "reports/plot.h"
#include "reports/stats.h"
#include "scenarios/config/csv.h"

namespace vlasim {

namespace {

// The parts of a delay, in the order of ControlStream::mean_s and the CSV.
std::vector<std::string> part_names() {
  std::vector<std::string> n = {"capture", "queue"};
  for (int k = 0; k < kStages; ++k) n.push_back(to_string(static_cast<Stage>(k)));
  n.push_back("other");
  n.push_back("actuation");
  return n;
}

std::vector<double> parts(const ControlRow& r) {
  std::vector<double> p = {r.capture_s, r.queue_s};
  for (int k = 0; k < kStages; ++k) p.push_back(r.stage_s[k]);
  p.push_back(r.other_s);
  p.push_back(r.actuation_s);
  return p;
}

std::string num(const char* f, double v) { return printf_number(f, v); }

// Actions whose time has come by `seconds` after the observation, at `hz` (a tolerance keeps
// a delay of exactly k periods at k).
int actions_past(double seconds, double hz, int chunk) {
  return static_cast<int>(std::min<double>(chunk, std::max(0.0, std::ceil(seconds * hz - 1e-9))));
}

}  // namespace

ControlReport make_control_report(const Scenario& s, const SimResult& r) {
  ControlReport c;
  for (size_t si = 0; si < s.streams.size(); ++si) {
    const StreamDecl& sd = s.streams[si];
    if (!sd.control.on()) continue;
    ControlStream cs;
    cs.stream = static_cast<int>(si);
    cs.name = sd.name;
    cs.model = s.models[static_cast<size_t>(sd.model)].name;
    cs.control = sd.control;
    cs.chunk = s.models[static_cast<size_t>(sd.model)].shape.chunk;
    const double hz = sd.control.hz, H = cs.chunk;
    std::vector<ControlRow> rows;
    for (const RequestRecord& q : r.requests) {
      if (q.stream != cs.stream) continue;
      ControlRow row;
      row.request = q.id;
      row.stream = cs.stream;
      row.finished = q.finished() && !q.failed;
      row.observed_s = q.arrival - sd.control.capture_s;
      row.capture_s = sd.control.capture_s;
      if (row.finished) {
        row.queue_s = q.start - q.arrival;
        double stages = 0;
        for (int k = 0; k < kStages; ++k)
          if (q.stage_done(k)) stages += row.stage_s[k] = q.stage_latency[k];
        row.other_s = std::max(0.0, q.end - q.start - stages);
        row.actuation_s = sd.control.actuation_s;
        row.ready_s = q.end + sd.control.actuation_s;
        row.delay_s = row.ready_s - row.observed_s;
        row.frozen = actions_past(row.delay_s, hz, cs.chunk);
        row.usable = cs.chunk - row.frozen;
      }
      rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end(), [](const ControlRow& a, const ControlRow& b) {
      return a.observed_s != b.observed_s ? a.observed_s < b.observed_s : a.request < b.request;
    });
    // Chunk i runs until the next finished chunk takes effect (or the run ends).
    const double run_end = std::max(r.end_time, r.horizon);
    double bound = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].finished) continue;
      double next = run_end;
      bool has_next = false;
      for (size_t j = i + 1; j < rows.size(); ++j)
        if (rows[j].finished && rows[j].ready_s > rows[i].ready_s) {
          next = rows[j].ready_s;
          has_next = true;
          break;
        }
      const bool unfinished_after = i + 1 < rows.size() && !has_next;
      if (has_next || unfinished_after) {
        rows[i].dry_s = std::max(0.0, next - (rows[i].observed_s + H / hz));
        if (has_next) bound = std::min(bound, H / (next - rows[i].observed_s));
      }
    }
    std::vector<double> delays;
    std::vector<double> frozen;
    cs.usable_min = cs.chunk;
    for (const ControlRow& row : rows) {
      ++cs.requests;
      if (!row.finished) {
        ++cs.unfinished;
        continue;
      }
      delays.push_back(row.delay_s);
      frozen.push_back(row.frozen);
      const std::vector<double> p = parts(row);
      for (size_t k = 0; k < p.size(); ++k) cs.mean_s[k] += p[k];
      cs.usable_min = std::min(cs.usable_min, row.usable);
      if (row.dry_s > 0) {
        ++cs.dry_chunks;
        cs.dry_s += row.dry_s;
      }
    }
    if (!delays.empty()) {
      for (double& m : cs.mean_s) m /= double(delays.size());
      cs.delay_p50 = percentile(delays, 0.5);
      cs.delay_p99 = percentile(delays, 0.99);
      cs.delay_max = *std::max_element(delays.begin(), delays.end());
      cs.frozen_p50 = static_cast<int>(percentile(frozen, 0.5));
      cs.frozen_max = static_cast<int>(*std::max_element(frozen.begin(), frozen.end()));
    }
    cs.bound_hz = std::isfinite(bound) ? bound : 0;
    c.streams.push_back(cs);
    c.rows.insert(c.rows.end(), rows.begin(), rows.end());
  }
  return c;
}

ArmRun control_arm(const Scenario& s, const SimResult& r, const ControlReport& c, const ControlStream& cs) {
  std::vector<ArmRequest> requests;
  for (const ControlRow& row : c.rows)
    if (row.stream == cs.stream) requests.push_back({row.observed_s, row.finished ? row.ready_s : -1});
  const StreamDecl& sd = s.streams[static_cast<size_t>(cs.stream)];
  // Its last chunk in: the arm runs until that one runs out (no dry tick can follow), else to
  // the run's end (the analysis counts a chunk followed by unfinished ones dry until then).
  const bool last_in = !requests.empty() && requests.back().ready_s >= 0;
  return run_arm(cs.chunk, cs.control.hz, sd.start_s - cs.control.capture_s, requests,
                 last_in ? std::numeric_limits<double>::infinity() : std::max(r.end_time, r.horizon));
}

std::string control_markdown(const ControlReport& c) {
  std::ostringstream os;
  os << "# Control delay and real-time chunking\n";
  const std::vector<std::string> names = part_names();
  for (const ControlStream& s : c.streams) {
    const ControlDecl& d = s.control;
    os << "\n## Stream " << s.name << " (model " << s.model << ")\n\n"
       << "Robot: " << num("%g", d.hz) << " actions/s, a chunk of " << s.chunk << " actions asked for every "
       << d.execute << " actions (" << num("%g", d.hz / d.execute) << " requests/s); capture "
       << num("%g", d.capture_s * 1e3) << " ms, actuation " << num("%g", d.actuation_s * 1e3) << " ms.\n\n"
       << "| requests | unfinished | delay p50 ms | p99 ms | max ms | frozen p50 / max | usable min | ran dry | dry s | bounded rate Hz |\n"
       << "|---|---|---|---|---|---|---|---|---|---|\n"
       << "| " << s.requests << " | " << s.unfinished << " | " << num("%.2f", s.delay_p50 * 1e3) << " | "
       << num("%.2f", s.delay_p99 * 1e3) << " | " << num("%.2f", s.delay_max * 1e3) << " | " << s.frozen_p50 << " / "
       << s.frozen_max << " | " << s.usable_min << " | " << s.dry_chunks << " | " << num("%.4g", s.dry_s) << " | "
       << (s.bound_hz > 0 ? num("%.1f", s.bound_hz) : "-") << " |\n\n"
       << "Where the delay goes (mean over finished requests):\n\n| part | ms | share |\n|---|---|---|\n";
    double total = 0;
    for (double m : s.mean_s) total += m;
    for (size_t k = 0; k < names.size(); ++k)
      if (s.mean_s[k] > 0)
        os << "| " << names[k] << " | " << num("%.3f", s.mean_s[k] * 1e3) << " | "
           << num("%.1f%%", total > 0 ? 100 * s.mean_s[k] / total : 0) << " |\n";
    os << "\n" << (s.bound_hz >= d.hz ? "Control-bounded rate above the robot's: these delays leave every chunk time to arrive.\n"
                                      : s.bound_hz > 0 ? "Control-bounded rate below the robot's: at " + num("%g", d.hz) +
                                                             " actions/s some chunk runs out before the next arrives.\n"
                                                       : "")
       << "\nSweep over a constant delay d (actions): usable = H - d; a robot asking every " << d.execute
       << " actions runs dry when d > H - " << d.execute << " = " << s.chunk - d.execute << ".\n\n"
       << "| d (actions) | d (ms) | frozen | usable | runs dry |\n|---|---|---|---|---|\n";
    const int step = std::max(1, s.chunk / 10);
    for (int k = 0; k <= s.chunk; k += step)
      os << "| " << k << " | " << num("%.1f", k / d.hz * 1e3) << " | " << k << " | " << s.chunk - k << " | "
         << (k > s.chunk - d.execute ? "yes" : "no") << " |\n";
  }
  return os.str();
}

std::string control_comparison(const ControlReport& predicted, const ControlReport& measured) {
  std::ostringstream os;
  os << "\n## Control delay and real-time chunking, predicted vs measured\n\n"
     << "| stream | figure | predicted | measured | predicted / measured |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < predicted.streams.size() && i < measured.streams.size(); ++i) {
    const ControlStream& p = predicted.streams[i];
    const ControlStream& m = measured.streams[i];
    auto row = [&](const std::string& figure, double a, double b, const char* f) {
      os << "| " << p.name << " | " << figure << " | " << num(f, a) << " | " << num(f, b) << " | "
         << (b != 0 ? num("%.3f", a / b) : "-") << " |\n";
    };
    row("delay p50 (ms)", p.delay_p50 * 1e3, m.delay_p50 * 1e3, "%.2f");
    row("delay max (ms)", p.delay_max * 1e3, m.delay_max * 1e3, "%.2f");
    row("frozen prefix p50 (actions)", p.frozen_p50, m.frozen_p50, "%.0f");
    row("chunks that ran dry", double(p.dry_chunks), double(m.dry_chunks), "%.0f");
    row("bounded rate (Hz)", p.bound_hz, m.bound_hz, "%.1f");
  }
  return os.str();
}

std::string control_csv(const ControlReport& c) {
  std::ostringstream os;
  os << "request,stream,finished,observed_s,ready_s,delay_s";
  for (const std::string& n : part_names()) os << "," << n << "_s";
  os << ",frozen,usable,dry_s\n";
  for (const ControlRow& r : c.rows) {
    std::string stream;
    for (const ControlStream& s : c.streams)
      if (s.stream == r.stream) stream = s.name;
    os << r.request << "," << csv_field(stream) << "," << (r.finished ? 1 : 0) << "," << num("%.9g", r.observed_s) << ","
       << (r.finished ? num("%.9g", r.ready_s) : "") << "," << (r.finished ? num("%.9g", r.delay_s) : "");
    for (double p : parts(r)) os << "," << (r.finished ? num("%.9g", p) : "");
    os << "," << (r.finished ? std::to_string(r.frozen) : "") << "," << (r.finished ? std::to_string(r.usable) : "")
       << "," << num("%.9g", r.dry_s) << "\n";
  }
  return os.str();
}

std::vector<std::string> write_control(const ControlReport& c, const std::string& dir,
                                       std::vector<std::string>* warnings) {
  std::vector<std::string> written;
  std::filesystem::create_directories(dir);
  write_into(dir, "control.md", control_markdown(c), &written);
  write_into(dir, "control.csv", control_csv(c), &written);
  if (!on_path("gnuplot")) {
    warnings->push_back("gnuplot is not on PATH: control_delay.svg not drawn (control.csv has its data)");
    return written;
  }
  // Data: one block per stream, one row per request (its first 200), the parts in ms.
  const std::vector<std::string> names = part_names();
  std::ostringstream data;
  std::vector<std::string> titles;
  for (const ControlStream& s : c.streams) {
    int n = 0;
    for (const ControlRow& r : c.rows)
      if (r.stream == s.stream && r.finished && n < 200) {
        data << n++;
        for (double p : parts(r)) data << " " << num("%.6g", p * 1e3);
        data << "\n";
      }
    data << "\n\n";
    titles.push_back(s.name);
  }
  write_file((std::filesystem::path(dir) / "control_delay.dat").string(), data.str());
  std::ostringstream gp;
  gp << kSvgHeader << "set output 'control_delay.svg'\nset style data histograms\nset style histogram rowstacked\n"
     << "set style fill solid 0.9 border -1\nset boxwidth 0.9\nset key outside right\nset xlabel 'request'\n"
     << "set ylabel 'control delay (ms)'\nset xtics auto\nset xrange [-1:*]\nset yrange [0:*]\n";
  const char* colours[] = {"#7f7f7f", "#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                           "#17becf"};
  gp << "set multiplot layout " << c.streams.size() << ",1\n";
  for (size_t i = 0; i < c.streams.size(); ++i) {
    gp << "set title " << gp_quote("stream " + titles[i]) << "\nplot ";
    for (size_t k = 0; k < names.size(); ++k)
      gp << (k ? ", " : "") << "'control_delay.dat' index " << i << " using " << k + 2 << " lc rgb '"
         << colours[k % 9] << "' title " << gp_quote(names[k]);
    gp << "\n";
  }
  gp << "unset multiplot\n";
  const std::string script = (std::filesystem::path(dir) / "control_delay.gp").string();
  write_file(script, gp.str());
  const std::string svg = (std::filesystem::path(dir) / "control_delay.svg").string();
  if (std::string e = run_gnuplot(script, svg); !e.empty()) warnings->push_back(e);
  else written.push_back(svg);
  return written;
}

std::vector<StreamingRow> make_streaming_report(const Scenario& s, const SimResult& r) {
  std::vector<StreamingRow> out;
  if (std::none_of(s.streams.begin(), s.streams.end(), [](const StreamDecl& d) { return d.stages != 0; }))
    return out;
  for (size_t si = 0; si < s.streams.size(); ++si) {
    const StreamDecl& sd = s.streams[si];
    StreamingRow row;
    row.name = sd.name;
    row.model = s.models[static_cast<size_t>(sd.model)].name;
    for (int k = 0; k < kStages; ++k)
      if (sd.stages == 0 || ((sd.stages >> k) & 1))
        row.stages += (row.stages.empty() ? "" : "+") + std::string(to_string(static_cast<Stage>(k)));
    if (sd.stages == 0) row.stages = "all";
    row.rate_hz = sd.rate_hz;
    row.reads_context = sd.stages != 0 && !(sd.stages & 1u);
    std::vector<double> lat, stale;
    for (const RequestRecord& q : r.requests) {
      if (q.stream != static_cast<int>(si)) continue;
      ++row.requests;
      if (q.finished() && !q.failed) {
        lat.push_back(q.latency());
        if (q.end <= sd.start_s + sd.duration_s) ++row.finished;  // within the stream's window
      }
      if (!q.met()) ++row.misses;
      if (row.reads_context && q.start >= 0) {
        if (q.context_end < 0) ++row.no_context;
        else stale.push_back(q.start - q.context_end);
      }
    }
    row.achieved_hz = sd.duration_s > 0 ? double(row.finished) / sd.duration_s : 0;
    if (!lat.empty()) {
      row.latency_p50 = percentile(lat, 0.5);
      row.latency_p99 = percentile(lat, 0.99);
    }
    if (!stale.empty()) {
      row.stale_p50 = percentile(stale, 0.5);
      row.stale_p99 = percentile(stale, 0.99);
      row.stale_max = *std::max_element(stale.begin(), stale.end());
    }
    out.push_back(row);
  }
  return out;
}

std::string streaming_markdown(const std::vector<StreamingRow>& rows) {
  std::ostringstream os;
  os << "# Streams\n\nStaleness: how old the context (the prefix) a request read was when it started.\n\n"
     << "| stream | model | stages | asked Hz | achieved Hz | latency p50 ms | p99 ms | misses | staleness p50 ms | p99 ms | max ms | without context |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const StreamingRow& r : rows) {
    os << "| " << r.name << " | " << r.model << " | " << r.stages << " | " << num("%.1f", r.rate_hz) << " | "
       << num("%.1f", r.achieved_hz) << " | " << num("%.2f", r.latency_p50 * 1e3) << " | "
       << num("%.2f", r.latency_p99 * 1e3) << " | " << r.misses << " | ";
    if (r.reads_context)
      os << num("%.2f", r.stale_p50 * 1e3) << " | " << num("%.2f", r.stale_p99 * 1e3) << " | "
         << num("%.2f", r.stale_max * 1e3) << " | " << r.no_context << " |\n";
    else
      os << "- | - | - | - |\n";
  }
  return os.str();
}

std::string streaming_csv(const std::vector<StreamingRow>& rows) {
  std::ostringstream os;
  os << "stream,model,stages,rate_hz,achieved_hz,requests,finished,misses,latency_p50_s,latency_p99_s,"
        "stale_p50_s,stale_p99_s,stale_max_s,no_context\n";
  for (const StreamingRow& r : rows)
    os << csv_field(r.name) << "," << csv_field(r.model) << "," << csv_field(r.stages) << "," << num("%.9g", r.rate_hz) << ","
       << num("%.9g", r.achieved_hz) << "," << r.requests << "," << r.finished << "," << r.misses << ","
       << num("%.9g", r.latency_p50) << "," << num("%.9g", r.latency_p99) << ","
       << (r.reads_context ? num("%.9g", r.stale_p50) : "") << "," << (r.reads_context ? num("%.9g", r.stale_p99) : "")
       << "," << (r.reads_context ? num("%.9g", r.stale_max) : "") << "," << (r.reads_context ? std::to_string(r.no_context) : "")
       << "\n";
  return os.str();
}

std::string streaming_comparison(const std::vector<StreamingRow>& predicted, const std::vector<StreamingRow>& measured) {
  std::ostringstream os;
  os << "\n## Streams, predicted vs measured\n\n"
     << "| stream | stages | achieved Hz, predicted / measured | ratio | latency p50 ms | staleness p50 ms | misses |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < predicted.size() && i < measured.size(); ++i) {
    const StreamingRow& p = predicted[i];
    const StreamingRow& m = measured[i];
    os << "| " << p.name << " | " << p.stages << " | " << num("%.1f", p.achieved_hz) << " / " << num("%.1f", m.achieved_hz)
       << " | " << (m.achieved_hz > 0 ? num("%.3f", p.achieved_hz / m.achieved_hz) : "-") << " | "
       << num("%.2f", p.latency_p50 * 1e3) << " / " << num("%.2f", m.latency_p50 * 1e3) << " | "
       << (p.reads_context ? num("%.2f", p.stale_p50 * 1e3) + " / " + num("%.2f", m.stale_p50 * 1e3) : "-") << " | "
       << p.misses << " / " << m.misses << " |\n";
  }
  return os.str();
}

}  // namespace vlasim
