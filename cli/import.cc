// vlasim import: public measured GPU kernel times (Vidur mlp.csv, ApxInf tactics JSON) as a
// vlasim device profile for a catalog GPU (sim/gpu_import.h); and vlasim gpu-eval: the
// leave-one-GPU-out evaluation of the GPU cost models on the vendored data
// (sim/gpu_kernel_model.h, data/gpu_profiles/README.md).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "reports/plot.h"
#include "sim/gpu_import.h"
#include "sim/gpu_kernel_model.h"

namespace vlasim::cli {
namespace {

const DeviceSpec& gpu_entry(const Catalog& cat, const std::string& name) {
  const DeviceSpec& d = cat.get(name, command_line("--device", name));
  if (d.type != DeviceType::Gpu)
    throw ConfigError("<command line>", 0, 0, "--device", "'" + name + "' is a " + to_string(d.type) +
                                                                " in the catalog, not a GPU");
  return d;
}

struct ImportArgs {
  std::string format, path, device, out;
  bool quiet = false;
};

int run_import(const Common& c, const ImportArgs& a) {
  const Catalog cat = Catalog::load_dir(c.catalog);
  const DeviceSpec& d = gpu_entry(cat, a.device);
  check_output_file("--out", a.out);
  std::vector<KernelSample> s = a.format == "vidur" ? import_vidur(a.path) : import_apxinf(a.path);
  const DeviceProfile p = samples_to_profile(s, d, a.format, a.format + " " + a.path);
  save_profile(p, a.out);
  if (!a.quiet)
    std::cout << "imported " << s.size() << " ops (" << a.format << ", " << a.path << ") for " << d.name << " ("
              << d.sms << " SMs) into " << a.out << "\n";
  return 0;
}

// The vendored data sets: folder under the data root, catalog GPU, description.
struct DataSet {
  std::string format, path, gpu, what;
  bool event_timed = false;  // CUDA events around each launch, not kernel (CUPTI) time
};
const std::vector<DataSet> kDataSets = {
    {"vidur", "vidur/data/profiling/compute/h100", "h100-sxm", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"vidur", "vidur/data/profiling/compute/a100", "a100-sxm-80gb", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"vidur", "vidur/data/profiling/compute/a40", "a40", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"apxinf", "apxinf/configs/pi05/orin_sm87_bf16_v2_v3_h10_tactics.json", "jetson-agx-orin-64gb",
     "ApxInf pi0.5 bf16 GEMMs, CUDA events, cold L2", true},
    {"apxinf", "apxinf/configs/pi05/thor_sm110_bf16_v2_v3_h10_tactics.json", "jetson-agx-thor",
     "ApxInf pi0.5 bf16 GEMMs, CUDA events, cold L2", true},
};

struct EvalArgs {
  std::string data = "data/gpu_profiles", out = "reports", fit_out;
  bool quiet = false;
};

int run_gpu_eval(const Common& c, const EvalArgs& a) {
  const Catalog cat = Catalog::load_dir(c.catalog);
  check_output_dir("--out", a.out);
  std::vector<GpuSamples> data;
  for (const DataSet& ds : kDataSets) {
    gpu_entry(cat, ds.gpu);
    const std::string p = a.data + "/" + ds.path;
    data.push_back({ds.gpu, ds.what, ds.format == "vidur" ? import_vidur(p) : import_apxinf(p), ds.event_timed});
  }
  const GpuEvaluation e = evaluate_gpus(data, cat);
  fs::create_directories(a.out);
  write_file(a.out + "/gpu_cost_model.md", gpu_evaluation_markdown(e, data));
  write_file(a.out + "/gpu_cost_model.csv", gpu_evaluation_csv(e));
  if (!a.fit_out.empty())
    write_file(a.fit_out,
               kernel_params_csv(e.all_fit,
                                 "Kernel GPU op model parameters (sim/gpu_kernel_model.h), fitted on every GPU vendored in\n"
                                 "data/gpu_profiles/ by `vlasim gpu-eval --fit-out`. Generated: rebuild with\n"
                                 "scripts/gpu_profiles.sh, do not edit. Read by the `kernel` cost model."));
  if (!a.quiet) std::cout << "wrote " << a.out << "/gpu_cost_model.md, gpu_cost_model.csv\n";
  return 0;
}

}  // namespace

Command add_import(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "public measured GPU kernel times as a device profile: 'vidur' (a Vidur mlp.csv, or a folder of them) or "
      "'apxinf' (an ApxInf tactics JSON), for a catalog GPU");
  cmd->add_option("format", a->format, "vidur or apxinf")->required()->check(CLI::IsMember({"vidur", "apxinf"}));
  cmd->add_option("path", a->path, "file (or, for vidur, a folder searched for mlp.csv)")->required();
  cmd->add_option("--device", a->device, "catalog GPU the data was measured on (e.g. h100-sxm)")->required();
  cmd->add_option("-o,--out", a->out, "profile JSON to write")->required();
  cmd->add_flag("-q,--quiet", a->quiet, "no summary line");
  return {cmd, [a](const Common& c) { return run_import(c, *a); }};
}

Command add_gpu_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gpu-eval",
      "leave-one-GPU-out evaluation of the GPU cost models (roofline, shaped, fitted kernel model) on the "
      "vendored measured kernel times; writes gpu_cost_model.md and .csv");
  cmd->add_option("data", a->data, "vendored data folder (default: data/gpu_profiles)");
  cmd->add_option("-o,--out", a->out, "folder for gpu_cost_model.md and .csv (default: reports)");
  cmd->add_option("--fit-out", a->fit_out,
                  "also write the kernel model fitted on every GPU, as the kernel cost model reads it");
  cmd->add_flag("-q,--quiet", a->quiet, "no summary line");
  return {cmd, [a](const Common& c) { return run_gpu_eval(c, *a); }};
}

}  // namespace vlasim::cli
