// A registry per family of swappable parts (cost models, device models, policies, executors,
// workloads): each entry has a name, a one-line description, its parameters and a factory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/config/config.h"

namespace vlasim {

template <class Base, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(const Params&, Args...)>;
  struct Entry {
    std::string name;
    std::string description;
    std::vector<ParamSpec> params;
    Factory make;
    // Whether the part declares a parameter called `param`.
    bool has_param(const std::string& param) const {
      for (const ParamSpec& p : params)
        if (p.name == param) return true;
      return false;
    }
  };

  explicit Registry(std::string family) : family_(std::move(family)) {}

  void add(Entry e) { entries_.push_back(std::move(e)); }
  // Adds `e`, or replaces the entry of its name.
  void put(Entry e) {
    for (auto& x : entries_)
      if (x.name == e.name) {
        x = std::move(e);
        return;
      }
    add(std::move(e));
  }

  const Entry* find(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.name);
    return out;
  }

  // Makes the part called `name`, checking `params` against its declared parameters.
  // Throws ConfigError located at `where` if the name is unknown (listing the valid names)
  // or a parameter is not declared.
  std::unique_ptr<Base> make(const std::string& name, const Params& params,
                             const ConfigNode& where, Args... args) const {
    const Entry* e = find(name);
    if (!e) where.fail("unknown " + family_ + " '" + name + "'; valid names are: " +
                       join_names(names()));
    params.check(e->params);
    return e->make(params, args...);
  }

  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& family() const { return family_; }

 private:
  std::string family_;
  std::vector<Entry> entries_;
};

}  // namespace vlasim
