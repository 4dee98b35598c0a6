#include "sim/sweep/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "core/error.h"

namespace uvmsim::sweep {

using Clock = std::chrono::steady_clock;

ProgressMode parse_progress_mode(const std::string& text, const std::ostream& out) {
  if (text == "bar") return ProgressMode::Bar;
  if (text == "lines") return ProgressMode::Lines;
  if (text == "none") return ProgressMode::None;
  if (text == "auto")
    return (&out == &std::cerr && ::isatty(2)) ? ProgressMode::Bar : ProgressMode::Lines;
  throw UserError("--progress: expected auto, bar, lines or none, got '" + text + "'");
}

std::string format_duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "--";
  if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  } else if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else if (s < 3600) {
    const long t = std::lround(s);
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  } else {
    const long t = std::lround(s / 60);
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 60, t % 60);
  }
  return buf;
}

Progress::Progress(std::ostream& out, ProgressMode mode, std::size_t total, std::size_t done)
    : out_(out),
      mode_(mode),
      total_(total),
      done_(done),
      initial_done_(done),
      start_(Clock::now()),
      last_draw_(start_) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Progress::started() {
  ++running_;
  tick();
}

void Progress::clear_bar() {
  if (mode_ == ProgressMode::Bar && drawn_) out_ << "\r\033[K";
  drawn_ = false;
}

void Progress::finished(const std::string& label, bool ok, double seconds,
                        const std::string& error) {
  if (running_ > 0) --running_;
  ++done_;
  if (!ok) ++failed_;
  std::ostringstream line;
  line << "[" << done_ << "/" << total_ << "] " << (ok ? "ok     " : "FAILED ") << label << "  ("
       << format_duration(seconds) << ")";
  if (!ok && !error.empty()) line << ": " << error;
  if (mode_ == ProgressMode::Lines || (mode_ == ProgressMode::Bar && !ok)) {
    clear_bar();
    out_ << line.str() << "\n";
  }
  tick(mode_ == ProgressMode::Bar && !ok);
  out_.flush();
}

void Progress::set_counts(std::size_t done, std::size_t running, std::size_t failed) {
  const bool changed = done != done_ || running != running_ || failed != failed_;
  done_ = done;
  running_ = running;
  failed_ = failed;
  if (mode_ == ProgressMode::Lines && changed) {
    out_ << bar_line() << "\n";
    out_.flush();
  }
  tick();
}

std::string Progress::bar_line() const {
  constexpr int kWidth = 30;
  // Counts come from other processes (Slurm tasks) too: whatever they say, the bar stays within
  // its width (a count above the total once made it ask for a string of 2^64 characters).
  const double frac =
      total_ ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 1.0;
  const int filled = std::clamp(static_cast<int>(frac * kWidth), 0, kWidth);
  std::ostringstream o;
  o << "[" << std::string(static_cast<std::size_t>(filled), '#')
    << std::string(static_cast<std::size_t>(kWidth - filled), '.') << "] " << done_ << "/" << total_
    << " done, " << running_ << " running, " << failed_ << " failed, " << format_duration(elapsed())
    << " elapsed, ETA ";
  const std::size_t finished_now = done_ > initial_done_ ? done_ - initial_done_ : 0;
  if (done_ >= total_) {
    o << "0 s";
  } else if (finished_now == 0) {
    o << "--";
  } else {
    o << format_duration(elapsed() / static_cast<double>(finished_now) *
                         static_cast<double>(total_ - done_));
  }
  return o.str();
}

void Progress::tick(bool force) {
  if (mode_ != ProgressMode::Bar) return;
  const auto now = Clock::now();
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  out_ << "\r\033[K" << bar_line();
  out_.flush();
  drawn_ = true;
}

void Progress::close() {
  if (mode_ == ProgressMode::Bar) {
    tick(true);
    out_ << "\n";
    out_.flush();
    drawn_ = false;
  }
}

}  // namespace uvmsim::sweep
