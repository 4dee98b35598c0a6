// A policy made of other policies (the tournament meta-policy, combined prefetchers): every
// event reaches every constituent, in order. Derived classes fill `parts_` and add decisions.
#pragma once

#include <vector>

#include "policies/policy.h"

namespace uvmsim {

/// Passes at most `quota` offers on to `inner` (one constituent's share of a budget).
class QuotaSink final : public ObservationSink {
 public:
  QuotaSink(ObservationSink& inner, std::size_t quota) : inner_(inner), left_(quota) {}
  Offer offer(std::uint32_t block, const PageMask* from) override {
    if (left_ == 0) return Offer::Full;
    const Offer r = inner_.offer(block, from);
    if (r == Offer::Accepted) --left_;
    return r;
  }

 private:
  ObservationSink& inner_;
  std::size_t left_;
};

template <typename Base>
class ForwardingPolicy : public Base {
 public:
  using Base::Base;

  void on_page_fault(const VaBlock& b, unsigned page, Tick now) override {
    for (auto* p : parts_) p->on_page_fault(b, page, now);
  }
  void on_access_counter(const VaBlock& b, unsigned page, ObservePurpose why, Tick now) override {
    for (auto* p : parts_) p->on_access_counter(b, page, why, now);
  }
  void on_eviction(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_eviction(b, now);
  }
  void on_prefetch(const VaBlock& b, const PageMask& pages, Tick now) override {
    for (auto* p : parts_) p->on_prefetch(b, pages, now);
  }
  void on_chunk_allocated(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_chunk_allocated(b, now);
  }
  void on_populated(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_populated(b, now);
  }
  void on_emptied(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_emptied(b, now);
  }
  void on_made_resident(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_made_resident(b, now);
  }
  void on_freed(const VaBlock& b, Tick now) override {
    for (auto* p : parts_) p->on_freed(b, now);
  }
  void on_kernel_start(const KernelEvent& k) override {
    for (auto* p : parts_) p->on_kernel_start(k);
  }
  void on_kernel_end(const KernelEvent& k) override {
    for (auto* p : parts_) p->on_kernel_end(k);
  }
  void on_iteration(std::int32_t it, Tick now) override {
    for (auto* p : parts_) p->on_iteration(it, now);
  }
  void on_threadblock_end(std::uint64_t tb, Tick now) override {
    for (auto* p : parts_) p->on_threadblock_end(tb, now);
  }
  bool wants_access_notifications() const override {
    for (auto* p : parts_)
      if (p->wants_access_notifications()) return true;
    return false;
  }
  void on_access(const AccessEvent& a) override {
    for (auto* p : parts_)
      if (p->wants_access_notifications()) p->on_access(a);
  }
  bool uses_observability() const override {
    for (auto* p : parts_)
      if (p->uses_observability()) return true;
    return false;
  }
  bool runs_in_userspace() const override {
    for (auto* p : parts_)
      if (p->runs_in_userspace()) return true;
    return false;
  }
  Tick take_decision_time() override {
    Tick t = 0;
    for (auto* p : parts_) t += p->take_decision_time();
    return t;
  }

 protected:
  std::vector<PolicyBase*> parts_;
};

}  // namespace uvmsim
