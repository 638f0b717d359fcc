// Internals of the oneDNN executor: buffers, bound primitives and one kernel per op.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executors/executor.h"
#include "executors/plan.h"

namespace vlasim::onednn {

// One executor's memory for its tensors, weights and temporaries, handed out in the order asked
// from page-aligned mappings of its own and released all at once with the arena. Where a buffer
// lies within its pages (which decides cache-set and 4K-aliasing conflicts between buffers, a
// few percent of an op's time and up to ~10% of an attention's) then follows from the
// executor's own requests alone, not from what the process allocated and freed before: a
// calibration and a run of the same segments in two processes get the same layout. Under
// AddressSanitizer each request is its own heap allocation, so overruns stay caught.
class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  // `bytes` (at least 1) of zero-filled memory, 64-byte aligned, living as long as the arena;
  // throws std::bad_alloc when the system gives none.
  char* take(size_t bytes);
  // Bytes mapped so far (whole pages).
  size_t mapped() const { return mapped_; }

 private:
  struct Chunk {
    char* base;
    size_t size, used;
  };
  std::vector<Chunk> chunks_;
  size_t mapped_ = 0;
};

// A 64-byte aligned, zero-filled allocation of `bytes`, held by an arena.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Arena& a, size_t bytes) : ptr_(a.take(bytes)), bytes_(bytes) {}
  char* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  char* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A primitive with its arguments bound once; runs without allocating in this code.
struct Exec {
  dnnl::primitive prim;
  dnnl::memory::desc scratch_md;
  std::vector<dnnl::memory> mems;
  std::vector<dnnl_exec_arg_t> args;

  void arg(int id, const dnnl::memory& m);
  // Binds the user scratchpad (REQUIRES: at least scratch_bytes() at ptr).
  void bind_scratch(const dnnl::engine& eng, void* ptr);
  size_t scratch_bytes() const { return scratch_md.get_size(); }
  void run(const dnnl::stream& s) const;
};

// Parameters, generated once per key and shared by every op that uses the key.
struct WeightCache {
  std::map<std::string, std::vector<std::pair<dnnl::memory::desc, dnnl::memory>>> mats;
  std::map<std::string, std::vector<float>> vecs;
};

struct Context {
  dnnl::engine eng;
  DType dtype = DType::BF16;
  uint64_t seed = 1;
  GateUpMode gate_up = GateUpMode::TwoMatmuls;
  const OpGraph* g = nullptr;
  std::map<TensorKey, Buffer>* tensors = nullptr;
  WeightCache* weights = nullptr;
  Arena* arena = nullptr;  // the executor's: every buffer and weight of its segments

  dnnl::memory::data_type dt() const;
  int64_t elem_bytes() const { return dtype_bytes(dtype); }
  // Address of the first element of a slot's view.
  char* ptr(const Slot& s) const;
  char* ptr(const TensorInfo& t) const;
  // Columns [col0, col0 + cols) of op `o`'s parameter `part` of shape [rows, full_cols]
  // (see fill_weight), reordered once into `target`.
  dnnl::memory matrix(const Op& o, const char* part, int64_t rows, int64_t full_cols,
                      int64_t col0, int64_t cols, const dnnl::memory::desc& target) const;
  // A parameter vector, rounded to the dtype, as float.
  const std::vector<float>& vec(const Op& o, const char* part, int64_t n) const;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const dnnl::stream& s) = 0;
  // Primitives needing a scratchpad.
  virtual std::vector<Exec*> execs() { return {}; }
};

std::unique_ptr<Kernel> make_gemm(const Context& c, const OpPlan& p);
std::unique_ptr<Kernel> make_attention(const Context& c, const OpPlan& p);
// Norm, Elementwise, Embedding, Transfer.
std::unique_ptr<Kernel> make_loop_kernel(const Context& c, const OpPlan& p);
// Bytes a kernel allocates for itself (temporaries), excluding tensors and weights.
uint64_t kernel_temp_bytes(const Op& o, const OpPlan& p, DType dtype, GateUpMode mode);

inline float bf16_to_f32(uint16_t v) {
  uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>(u >> 16);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float load(const float* p, int64_t i) { return p[i]; }
inline float load(const uint16_t* p, int64_t i) { return bf16_to_f32(p[i]); }
inline void store(float* p, int64_t i, float v) { p[i] = v; }
inline void store(uint16_t* p, int64_t i, float v) { p[i] = f32_to_bf16(v); }

// RoPE angle tables for positions [0, positions) and pairs [0, head_dim / 2):
// theta = pos * 10000^(-2 i / head_dim); cos and sin get positions * head_dim / 2 values.
void rope_tables(int64_t positions, int64_t head_dim, std::vector<float>* cos, std::vector<float>* sin);

// out[R, C] = `a` with the first `span` columns rotated per head of `hd` at position
// r % per (tables from rope_tables); `a(r, j)` reads the source, which may be out itself.
template <class T, class Src>
void rope_rows(Src a, T* out, int64_t R, int64_t C, int64_t span, int64_t hd, int64_t per, const float* cs,
               const float* sn) {
  const int64_t half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* cr = cs + (r % per) * half;
    const float* sr = sn + (r % per) * half;
    for (int64_t h0 = 0; h0 < span; h0 += hd)
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = a(r, h0 + i), x1 = a(r, h0 + half + i);
        store(out, r * C + h0 + i, x0 * cr[i] - x1 * sr[i]);
        store(out, r * C + h0 + half + i, x1 * cr[i] + x0 * sr[i]);
      }
    for (int64_t j = span; j < C; ++j) store(out, r * C + j, a(r, j));
  }
}

}  // namespace vlasim::onednn
