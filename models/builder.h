// Model cards (YAML files under models/cards/) and the builder that turns a card plus a
// run-time shape into an operator graph.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config.h"

namespace vlasim {

// Run-time shape of one inference. Zero/negative fields take the card's defaults.
struct RunShape {
  int views = 0;        // camera views (card default when 0)
  int prompt = -1;      // prompt tokens (card default when < 0)
  int chunk = 0;        // action chunk / horizon (card default when 0)
  int steps = 0;        // flow-matching / diffusion / decoding steps (card default when 0)
  int batch = 1;        // requests run together
  DType dtype = DType::BF16;
};

// A parsed model card: the file's name, its components in execution order, and defaults.
struct ModelCard {
  std::string name;
  std::string file;
  std::string description;
  ConfigNode node;  // the whole card, kept for the component builders and for errors
  RunShape defaults;
};

// Loads and validates a card file. Throws ConfigError (file, line, key) on a bad card.
ModelCard load_card(const std::string& path);
// Finds `name` in `dir` (dir/name.yaml). Throws ConfigError at `where` listing the cards
// in `dir` if there is none.
ModelCard find_card(const std::string& dir, const std::string& name, const ConfigNode& where);
// Names of the cards in `dir`, sorted.
std::vector<std::string> card_names(const std::string& dir);

// Builds the operator graph of one inference. Throws ConfigError for an impossible shape
// (e.g. more views than the card allows, a negative prompt).
OpGraph build_graph(const ModelCard& card, const RunShape& shape);

// Component types a card may use, as (type, one-line description), in registry order.
std::vector<std::pair<std::string, std::string>> card_component_types();

// Directory holding the shipped cards (set at build time; VLASIM_CARDS overrides).
std::string default_cards_dir();

}  // namespace vlasim
