// Helpers shared by the model tests.
#pragma once

#include <set>
#include <string>

#include "models/builder.h"

namespace vlasim::testing {

inline ModelCard card(const std::string& name) {
  return load_card(default_cards_dir() + "/" + name + ".yaml");
}

// Unique parameter elements (bytes / dtype bytes) of the ops of one component.
inline double params_of(const OpGraph& g, const std::string& component, double elem_bytes = 2) {
  std::set<std::string> seen;
  double b = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Op& o = g.op(int(i));
    if (o.component == component && !o.weight_id.empty() && seen.insert(o.weight_id).second)
      b += o.weight_bytes;
  }
  return b / elem_bytes;
}

// Relative difference |a - b| / |b|.
inline double rel(double a, double b) { return (a > b ? a - b : b - a) / (b < 0 ? -b : b); }

}  // namespace vlasim::testing
