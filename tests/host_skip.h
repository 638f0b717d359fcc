// Test helper: skip a test whose dtype this machine's CPU cannot run, saying why (the host's
// oneDNN ISA and what bf16 needs), so an AVX2-only host runs every other test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "executors/host.h"

#define VLASIM_SKIP_UNLESS_CPU_RUNS(dtype)                                           \
  do {                                                                               \
    if (std::string why_ = ::vlasim::cpu_dtype_problem(dtype); !why_.empty()) {      \
      GTEST_SKIP() << why_;                                                          \
    }                                                                                \
  } while (0)
