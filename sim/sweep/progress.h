// Progress of a sweep on the terminal: a one-line bar (done / running / failed, elapsed, ETA)
// redrawn in place, or one line per finished point when the output is not a terminal (logs, CI).
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>

namespace uvmsim::sweep {

enum class ProgressMode { Bar, Lines, None };

/// "auto" -> Bar if `out` is the process's stderr and a terminal, else Lines.
ProgressMode parse_progress_mode(const std::string& text, const std::ostream& out);

/// "3.2 s", "4m05s", "1h02m".
std::string format_duration(double seconds);

class Progress {
 public:
  /// `total` points of which `done` are already finished before this run.
  Progress(std::ostream& out, ProgressMode mode, std::size_t total, std::size_t done);

  void started();
  /// A point finished (ok) or failed (with `error`), after `seconds`.
  void finished(const std::string& label, bool ok, double seconds, const std::string& error = "");
  /// For backends that only observe counts (Slurm): absolute numbers.
  void set_counts(std::size_t done, std::size_t running, std::size_t failed);
  /// Redraws the bar (at most every 100 ms unless `force`).
  void tick(bool force = false);
  /// Ends the bar line.
  void close();

  std::size_t done() const { return done_; }
  std::size_t failed() const { return failed_; }
  double elapsed() const;

 private:
  std::string bar_line() const;
  void clear_bar();

  std::ostream& out_;
  ProgressMode mode_;
  std::size_t total_, done_, initial_done_, running_ = 0, failed_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace uvmsim::sweep
