// Importers of public measured GPU kernel times (data/gpu_profiles/README.md) into vlasim's
// ops and profile format:
//   - Vidur (microsoft/vidur) data/profiling/compute/<gpu>/<org>/<model>/mlp.csv: per row one
//     model layout (n_head, n_kv_head, n_embd, n_expanded_embd, use_gated_mlp) at num_tokens
//     tokens and num_tensor_parallel_workers; per op time_stats.<op>.{min,max,mean,median,std}
//     in milliseconds (sums of CUPTI kernel durations, warm L2, fp16).
//   - ApxInf (infinigence/ApxInf) configs/pi05/*_tactics.json: bf16 GEMMs (m, n, k) with the
//     fastest tactic's time in milliseconds (CUDA events, mean of 30 runs, cold L2).
// Each op is built as the model builder builds it (models/emit.cc: flops, bytes, weights) so
// the cost models price imported and simulated ops alike. Vidur ops imported (shapes with
// T = num_tokens, hd = n_embd / n_head, tp = workers, ff = n_expanded_embd):
//   attn_pre_proj   gemm m=T n=(n_head + 2 n_kv_head) hd / tp k=n_embd, bias
//   attn_post_proj  gemm m=T n=n_embd k=n_head hd / tp
//   mlp_up_proj     gemm m=T n=(gated ? 2 ff : ff) / tp k=n_embd
//   mlp_down_proj   gemm m=T n=n_embd k=ff / tp
//   input_layernorm, post_attention_layernorm  norm T x n_embd (RMSNorm when gated, else
//                   LayerNorm with bias: phi-2)
//   mlp_act         elementwise T x ff / tp: silu (gated: SiluAndMul reads both halves) or gelu
//   add             elementwise add T x n_embd
// emb and attn_rope are read (checked) but not imported.
// Errors (ConfigError, exit 2 at the command line) name the file, line and column: unreadable
// or malformed text, a row with the wrong number of fields, an unknown or missing column, a
// value that is not a number or not whole, a time outside [min, max] or not plausibly in
// milliseconds, an unknown field in a JSON record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"
#include "sim/hardware/hardware.h"
#include "sim/measured/profile.h"

namespace vlasim {

// One measured kernel (or op) time.
struct KernelSample {
  Op op;                // shape, flops and bytes as the builder makes them
  std::string label;    // the source's op name ("mlp_up_proj"), or "gemm" for ApxInf
  double seconds = 0;   // measured, > 0 (the median of merged duplicates)
  double spread = 0;    // source's std / median (Vidur), 0 when not given
  int reps = 0;         // timed runs of the source
  std::string source;   // "vidur:<path>:<line>" (first of merged duplicates)
  int merged = 1;       // rows measuring the same op_signature, merged
};

// Most bytes of mlp.csv text one import reads from a folder (the vendored data: 2.5 MB).
inline constexpr std::uintmax_t kMaxVidurFolderBytes = std::uintmax_t{32} << 20;
// Reads one Vidur mlp.csv, or every mlp.csv under a directory (sorted by path; each file a
// regular file of at most kMaxInputFileBytes, together at most kMaxVidurFolderBytes). Ops with the
// same op_signature (repeated rows; norms and adds equal at every TP) are merged into one
// sample at the median time.
std::vector<KernelSample> import_vidur(const std::string& path);
// Reads one ApxInf tuning/tactics JSON (schema apxinf.cuda.tuning.v1, bf16 records).
// `device_name`: where given, set to the file's device_name ("" when it has none).
std::vector<KernelSample> import_apxinf(const std::string& path, std::string* device_name = nullptr);
// The same for a file's text; `name` stands in for the file in errors (the fuzz target's way in).
std::vector<KernelSample> parse_vidur(const std::string& text, const std::string& name);
std::vector<KernelSample> parse_apxinf(const std::string& text, const std::string& name,
                                       std::string* device_name = nullptr);
// Why a file measured on `measured_on` (a device name as CUDA gives it, "NVIDIA GeForce RTX 4090",
// "Orin") is not catalog GPU `gpu`: a word of it, other than the vendor's, that neither the
// entry's name nor its description holds; "" when every word is there.
std::string device_name_mismatch(const std::string& measured_on, const DeviceSpec& gpu);

// A measured time must be one the catalog GPU can give: at least its work at kDatasheetComputeSlack
// x the datasheet peak and kDatasheetMemorySlack x its DRAM bandwidth (warm-L2 data runs above
// DRAM speed), and at most kDatasheetSlowFactor x the datasheet time or kSlowestPlausibleS,
// whichever is longer. check_against_datasheet throws ConfigError naming the sample's source
// (file and line), the GPU and both figures otherwise.
inline constexpr double kDatasheetComputeSlack = 1.5, kDatasheetMemorySlack = 4;
inline constexpr double kDatasheetSlowFactor = 1000, kSlowestPlausibleS = 1e-3;
void check_against_datasheet(const KernelSample& s, const DeviceSpec& gpu);
// A profile of `samples` for catalog GPU `gpu` (each checked with check_against_datasheet): one section at the GPU's full SM count per
// dtype present, table by op_signature, fits refitted. `tool` ("vidur", "apxinf") is the
// executor named, `machine` what the source says it ran on.
DeviceProfile samples_to_profile(const std::vector<KernelSample>& samples, const DeviceSpec& gpu,
                                 const std::string& tool, const std::string& machine);

// Ops as the builder makes them (exposed for tests and the GPU cost model's evaluation).
Op gemm_op(int64_t m, int64_t n, int64_t k, bool bias, DType t);
Op norm_op(OpFn fn, int64_t rows, int64_t width, DType t);
Op eltwise_op(OpFn fn, int64_t rows, int64_t width, double inputs, DType t);

}  // namespace vlasim
