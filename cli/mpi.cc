// `vlasim sweep` over MPI ranks (Boost.MPI): rank r simulates the values i with
// i % size == r, rank 0 gathers the rows, finishes the sweep and writes its outputs. The
// sweep itself is reports/sweep.h's; this file only moves its rows and its errors.
#include "cli/mpi.h"

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>

#include <iostream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vlasim {

namespace {

// What one rank hands rank 0 after its share of the values.
struct RankShare {
  std::string rows;                  // encode_sweep_rows of its rows, in value order
  int status = 0;                    // non-zero: an error that stops the sweep...
  std::string message;               // ...printed as this...
  unsigned long long failed_at = 0;  // ...stopped this rank at this value's index
  template <class Archive>
  void serialize(Archive& a, unsigned /*version*/) {
    a & rows & status & message & failed_at;
  }
};

// Every rank passes its own failure (status 0: none); every rank gets the same answer: the
// failure of the lowest rank that failed, its message naming the rank when it is not rank 0
// (rank 0 fails alike on anything that does not depend on the node), or status 0.
CommandFailure first_failure(const boost::mpi::communicator& world, const CommandFailure& mine) {
  std::vector<std::pair<int, std::string>> all;
  boost::mpi::all_gather(world, std::make_pair(mine.status, mine.message), all);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].first == 0) continue;
    std::string message = all[r].second;
    if (r > 0) {
      const std::string where = "rank " + std::to_string(r) + " of " + std::to_string(all.size()) + ": ";
      const std::string prefix = "error: ";
      message = message.rfind(prefix, 0) == 0 ? prefix + where + message.substr(prefix.size()) : where + message;
    }
    return {all[r].first, message};
  }
  return {};
}

}  // namespace

int run_sweep_over_ranks(const std::function<SweepSpec(bool lead)>& setup,
                         const std::function<void(double)>& progress,
                         const std::function<void(const SweepResult&)>& publish) {
  // MPI_Init here, MPI_Finalize on return. An exception escaping this function (only Boost.MPI's
  // own, on a failed transfer: everything else is caught below) makes it call MPI_Abort, so
  // no rank waits for one that has gone.
  boost::mpi::environment env(boost::mpi::threading::funneled, /*abort_on_exception=*/true);
  boost::mpi::communicator world;
  const int rank = world.rank(), size = world.size();
  const bool lead = rank == 0;
  auto end_with = [&](const CommandFailure& f) {
    if (lead && f.status != 0) std::cerr << f.message << std::flush;
    return f.status;
  };

  // 1. The command line, the scenario and the whole sweep's work, checked on every rank; all
  //    go on only if all passed.
  SweepSpec spec;
  const CommandFailure checked = first_failure(world, attempt([&] {
    spec = setup(lead);
    check_sweep_work(spec);
  }));
  if (checked.status != 0) return end_with(checked);

  // 2. This rank's share of the values. An error that stops the sweep stops this rank's share
  //    at that value; rank 0 picks the first such value over all ranks, which is where a serial
  //    run would have stopped.
  const size_t n = spec.axis.values.size();
  const size_t share_size = static_cast<size_t>(rank) < n ? (n - rank + size - 1) / size : 0;
  RankShare share;
  std::vector<SweepRow> rows;
  for (size_t i = rank; i < n; i += size) {
    const CommandFailure f = attempt([&] { rows.push_back(sweep_row(spec, i)); });
    if (f.status != 0) {
      share.status = f.status;
      share.message = f.message;
      share.failed_at = i;
      break;
    }
    if (lead && progress) progress(static_cast<double>(rows.size()) / static_cast<double>(share_size));
  }
  share.rows = encode_sweep_rows(rows);
  rows.clear();

  // 3. Rank 0 puts the rows back in value order, finishes and publishes; every rank then
  //    learns rank 0's status.
  std::vector<RankShare> shares;
  boost::mpi::gather(world, share, shares, 0);
  CommandFailure done;
  if (lead) {
    const RankShare* stop = nullptr;
    for (const RankShare& s : shares)
      if (s.status != 0 && (!stop || s.failed_at < stop->failed_at)) stop = &s;
    if (stop) {
      done = {stop->status, stop->message};
    } else {
      done = attempt([&] {
        std::vector<std::vector<SweepRow>> parts;
        for (const RankShare& s : shares) parts.push_back(decode_sweep_rows(s.rows));
        std::vector<SweepRow> all;
        all.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          std::vector<SweepRow>& part = parts[i % static_cast<size_t>(size)];
          const size_t k = i / static_cast<size_t>(size);
          if (k >= part.size())
            throw std::runtime_error("sweep over MPI: rank " + std::to_string(i % size) + " sent " +
                                     std::to_string(part.size()) + " rows, fewer than its share");
          all.push_back(std::move(part[k]));
        }
        publish(finish_sweep(spec, std::move(all)));
      });
    }
  }
  boost::mpi::broadcast(world, done.status, 0);
  return end_with(done);
}

}  // namespace vlasim
