// What CUDA sees on this machine. Built only with VLASIM_WITH_CUDA; the GPU executor (a later
// issue) starts here.
#pragma once

#include <string>

namespace vlasim {

// Number of usable CUDA devices; 0 when there is no GPU or no driver (never throws).
int cuda_device_count();
// "NAME, N SMs, X GiB, cc M.m" for device `index`, or the CUDA error text.
std::string cuda_device_description(int index);

}  // namespace vlasim
