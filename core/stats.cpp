#include "core/stats.h"

#include <cmath>

#include <bit>

namespace uvmsim {

const char* to_string(HtodCause c) {
  switch (c) {
    case HtodCause::Demand:
      return "demand";
    case HtodCause::Prefetch:
      return "prefetch";
    case HtodCause::UserPrefetch:
      return "user_prefetch";
    case HtodCause::AccessCounter:
      return "access_counter";
    case HtodCause::Observation:
      return "observation";
    case HtodCause::RegionPrefetch:
      return "region_prefetch";
    case HtodCause::Placement:
      return "placement";
    default:
      return "?";
  }
}

const char* to_string(DtohCause c) {
  switch (c) {
    case DtohCause::Eviction:
      return "eviction";
    case DtohCause::CpuFault:
      return "cpu_fault";
    case DtohCause::UserPrefetch:
      return "user_prefetch";
    case DtohCause::Observation:
      return "observation";
    case DtohCause::Placement:
      return "placement";
    case DtohCause::PeerStaged:
      return "peer_staged";
    default:
      return "?";
  }
}

void Stats::add_batch(std::uint64_t size) {
  ++fault_batches;
  const unsigned b = size ? static_cast<unsigned>(std::bit_width(size) - 1) : 0;
  ++batch_size_hist[std::min<unsigned>(b, batch_size_hist.size() - 1)];
  max_batch_size = std::max(max_batch_size, size);
}

static double ratio(std::uint64_t a, std::uint64_t b) {
  return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

double RunningStat::stddev() const {
  return count > 1 ? std::sqrt(m2 / static_cast<double>(count)) : 0.0;
}

nlohmann::json RunningStat::to_json() const {
  return {{"count", count}, {"mean", mean}, {"std", stddev()}, {"min", min}, {"max", max}};
}

nlohmann::json Stats::driver_json() const {
  using nlohmann::json;
  return {{"bottom_halves", bottom_halves},
          {"replays", replays},
          {"va_blocks_serviced", va_blocks_serviced},
          {"chunk_allocations", chunk_allocations},
          {"pma_calls", pma_calls},
          {"zero_filled_pages", zero_filled_pages},
          {"remote_maps", remote_maps},
          {"cpu_faults", cpu_faults},
          {"cpu_first_touch_pages", cpu_first_touch_pages},
          {"thrashing_pages", thrashing_pages},
          {"throttle_hints", throttle_hints},
          {"pin_hints", pin_hints},
          {"thrashing_block_resets", thrashing_block_resets},
          {"cpu_read_duplicates", cpu_read_duplicates},
          {"cpu_remote_maps", cpu_remote_maps},
          {"access_counter_notifications", access_counter_notifications},
          {"access_counter_batches", access_counter_batches},
          {"access_counter_single_page", access_counter_single_page},
          {"region_prefetches", region_prefetches},
          {"cross_block_prefetches", cross_block_prefetches},
          {"cross_block_prefetch_bytes", cross_block_prefetch_bytes},
          {"frees", frees},
          {"freed_gpu_pages", freed_gpu_pages},
          {"freed_cpu_pages", freed_cpu_pages},
          {"policy_messages", policy_messages},
          {"policy_time_ns", policy_time / kPsPerNs},
          {"batch_time_ns", batch_time_total / kPsPerNs},
          {"flush_time_ns", flush_time / kPsPerNs},
          {"channel_full_waits", channel_full_waits},
          {"channel_full_wait_ns", channel_full_wait / kPsPerNs},
          {"mean_batch_time_ns", fault_batches ? batch_time_total / kPsPerNs / fault_batches : 0}};
}

void Stats::batches_json(nlohmann::json& j) const {
  using nlohmann::json;
  json hist = json::array();
  for (std::size_t i = 0; i < batch_size_hist.size(); ++i) {
    if (!batch_size_hist[i]) continue;
    hist.push_back({{"min", std::uint64_t{1} << i},
                    {"max", (std::uint64_t{1} << (i + 1)) - 1},
                    {"batches", batch_size_hist[i]}});
  }
  j["batch_size_histogram"] = hist;
  j["max_batch_size"] = max_batch_size;
  j["batch_stats"] = {{"va_blocks_per_batch", batch.va_blocks_per_batch.to_json()},
                      {"faults_per_va_block", batch.faults_per_va_block.to_json()},
                      {"faults_per_sm_per_batch", batch.faults_per_sm_per_batch.to_json()},
                      {"sources_per_batch", batch.sources_per_batch.to_json()}};
}

nlohmann::json Stats::kernels_json() const {
  using nlohmann::json;
  json ks = json::array();
  for (const auto& k : kernels) {
    ks.push_back({{"launch", k.launch_index},
                  {"kernel_id", k.kernel_id},
                  {"name", k.name},
                  {"iteration", k.iteration},
                  {"start_ns", k.start / kPsPerNs},
                  {"end_ns", k.end / kPsPerNs},
                  {"time_ns", (k.end - k.start) / kPsPerNs},
                  {"threadblocks", k.threadblocks},
                  {"accesses", k.accesses},
                  {"gpu_faults", k.gpu_faults},
                  {"fault_batches", k.fault_batches}});
    if (gpus > 1) ks.back()["gpu"] = k.gpu;
  }
  return ks;
}

nlohmann::json Stats::gpus_json() const {
  using nlohmann::json;
  json out = json::array();
  for (unsigned g = 0; g < gpus; ++g) {
    std::uint64_t launches = 0, acc = 0, faults = 0, batches = 0;
    Tick busy = 0;
    for (const auto& k : kernels) {
      if (k.gpu != g) continue;
      ++launches;
      acc += k.accesses;
      faults += k.gpu_faults;
      batches += k.fault_batches;
      busy += k.end - k.start;
    }
    const GpuStats s = g < per_gpu.size() ? per_gpu[g] : GpuStats{};
    out.push_back({{"gpu", g},
                   {"kernels", launches},
                   {"kernel_time_ns", busy / kPsPerNs},
                   {"accesses", acc},
                   {"gpu_faults", faults},
                   {"fault_batches", batches},
                   {"evictions", s.evictions},
                   {"block_lock_waits", s.block_lock_waits},
                   {"block_lock_wait_ns", s.block_lock_wait / kPsPerNs},
                   {"host_link",
                    {{"htod_bytes", s.htod_bytes},
                     {"dtoh_bytes", s.dtoh_bytes},
                     {"peer_staged_bytes", s.peer_staged_bytes},
                     {"remote_bytes", s.remote_bytes}}}});
    if (!peer_copy_bytes.empty())
      out.back()["peer_link"] = {{"copy_out_bytes", s.peer_copy_out_bytes},
                                 {"copy_in_bytes", s.peer_copy_in_bytes},
                                 {"remote_bytes", s.peer_remote_bytes},
                                 {"maps", s.peer_maps}};
  }
  return out;
}

nlohmann::json Stats::peer_links_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (unsigned src = 0; src < gpus; ++src)
    for (unsigned dst = 0; dst < gpus; ++dst)
      if (src != dst)
        out.push_back({{"src", src},
                       {"dst", dst},
                       {"copy_bytes", peer_copy_bytes[std::size_t{src} * gpus + dst]},
                       {"remote_bytes", peer_remote_bytes[std::size_t{src} * gpus + dst]}});
  return out;
}

nlohmann::json Stats::observability_json() const {
  using nlohmann::json;
  const auto by_purpose = [](const std::array<std::uint64_t, 2>& a) {
    return json{{"eviction", a[0]}, {"feedback", a[1]}, {"total", a[0] + a[1]}};
  };
  const auto obs_htod = htod_by_cause[static_cast<std::size_t>(HtodCause::Observation)];
  const auto obs_dtoh = dtoh_by_cause[static_cast<std::size_t>(DtohCause::Observation)];
  return {{"active", observe.active},
          {"regions", by_purpose(observe.regions)},
          {"accessed", by_purpose(observe.accessed)},
          {"evicted_unaccessed", by_purpose(observe.evicted_unaccessed)},
          {"cancelled", by_purpose(observe.cancelled)},
          {"sample_pages", observe.sample_pages},
          {"remote_accesses", observe.remote_accesses},
          {"max_observed", observe.max_observed},
          {"htod_bytes", obs_htod},
          {"dtoh_bytes", obs_dtoh},
          {"service_time_ns", observe.service_time / kPsPerNs},
          {"samples_per_region", observe.samples_per_region},
          {"samples_doubled", observe.samples_doubled},
          {"samples_halved", observe.samples_halved}};
}

nlohmann::json Stats::placement_json() const {
  using nlohmann::json;
  const auto& pl = placement;
  return {{"actions", pl.actions},
          {"gpu_pinned_pages", pl.gpu_pinned_pages},
          {"host_pinned_pages", pl.host_pinned_pages},
          {"host_memset_pages", pl.host_memset_pages},
          {"released_pages", pl.released_pages},
          {"max_pinned_chunks", pl.max_pinned_chunks},
          {"reservations", pl.reservations},
          {"reservation_evictions", pl.reservation_evictions},
          {"no_chunk_remote_maps", pl.no_chunk_remote_maps},
          {"no_migrate_remote_maps", pl.no_migrate_remote_maps},
          {"notifications_ignored", pl.notifications_ignored},
          {"htod_bytes", htod_by_cause[static_cast<std::size_t>(HtodCause::Placement)]},
          {"dtoh_bytes", dtoh_by_cause[static_cast<std::size_t>(DtohCause::Placement)]},
          {"host_time_ns", pl.host_time / kPsPerNs}};
}

const char* to_string(PrefetchCause c) {
  switch (c) {
    case PrefetchCause::Prefetch:
      return "prefetch";
    case PrefetchCause::RegionPrefetch:
      return "region_prefetch";
    case PrefetchCause::UserPrefetch:
      return "user_prefetch";
    case PrefetchCause::Placement:
      return "placement";
    case PrefetchCause::kCount:
      break;
  }
  return "?";
}

nlohmann::json Stats::prefetch_use_json() const {
  // accuracy = useful / resolved (pages still unresolved at the end are neither);
  // coverage = useful / (useful + demand): the share of first accesses a prefetch served.
  nlohmann::json j = nlohmann::json::object();
  const auto& u = prefetch_use;
  // null, not 0, when nothing was resolved: "no prefetch" is not "every prefetch wasted".
  auto share = [](std::uint64_t a, std::uint64_t b) {
    return b ? nlohmann::json(static_cast<double>(a) / static_cast<double>(b)) : nlohmann::json();
  };
  std::uint64_t all_useful = 0;
  for (std::size_t c = 0; c < PrefetchUseStats::kCauses; ++c) {
    all_useful += u.useful[c];
    j[to_string(static_cast<PrefetchCause>(c))] = {
        {"pages", u.pages[c]},
        {"useful", u.useful[c]},
        {"useless", u.useless[c]},
        {"unresolved", u.unresolved(c)},
        {"accuracy", share(u.useful[c], u.useful[c] + u.useless[c])},
        {"coverage", share(u.useful[c], u.useful[c] + u.demand_pages)}};
  }
  j["demand_pages"] = u.demand_pages;
  j["coverage"] = share(all_useful, all_useful + u.demand_pages);
  return j;
}

nlohmann::json Stats::to_json() const {
  using nlohmann::json;
  json j;
  j["sim_time_ns"] = sim_time / kPsPerNs;
  j["truncated"] = truncated;
  j["accesses"] = accesses;
  j["records"] = records;
  j["gpu_faults"] = gpu_faults;
  j["fault_batches"] = fault_batches;
  j["evictions"] = evictions;
  j["evicted_pages"] = evicted_pages;
  j["cpu_backing_pages"] = cpu_backing_pages;
  j["htod_bytes"] = htod_bytes;
  j["dtoh_bytes"] = dtoh_bytes;
  j["htod_copies"] = htod_copies;
  j["dtoh_copies"] = dtoh_copies;
  json hc = json::object(), dc = json::object();
  for (std::size_t i = 0; i < htod_by_cause.size(); ++i)
    hc[to_string(static_cast<HtodCause>(i))] = htod_by_cause[i];
  for (std::size_t i = 0; i < dtoh_by_cause.size(); ++i)
    dc[to_string(static_cast<DtohCause>(i))] = dtoh_by_cause[i];
  j["htod_bytes_by_cause"] = hc;
  j["dtoh_bytes_by_cause"] = dc;
  j["remote_accesses"] = remote_accesses;
  j["remote_bytes"] = remote_bytes;
  j["remote_bytes_by_kind"] = {{"read", remote_read_bytes}, {"write", remote_write_bytes}};
  j["unmapped_accesses"] = unmapped_accesses;
  j["tlb"] = {{"l1_lookups", l1_tlb_lookups},
              {"l1_hits", l1_tlb_hits},
              {"l1_hit_rate", ratio(l1_tlb_hits, l1_tlb_lookups)},
              {"l2_lookups", l2_tlb_lookups},
              {"l2_hits", l2_tlb_hits},
              {"l2_hit_rate", ratio(l2_tlb_hits, l2_tlb_lookups)},
              {"page_walks", page_walks}};
  j["faults"] = {{"utlb_stalls", utlb_stalls},
                 {"retries", fault_retries},
                 {"resolved_at_walk", faults_resolved_at_walk},
                 {"fetched", faults_fetched},
                 {"coalesced", faults_coalesced},
                 {"duplicate", faults_duplicate},
                 {"serviced", faults_serviced},
                 {"already_resident", faults_already_resident},
                 {"flushed", faults_flushed},
                 {"throttled", faults_throttled}};
  j["driver"] = driver_json();
  batches_json(j);
  j["kernels"] = kernels_json();
  if (gpus > 1) j["gpus"] = gpus_json();
  if (!peer_copy_bytes.empty()) j["peer_links"] = peer_links_json();
  j["observability"] = observability_json();
  j["placement"] = placement_json();
  j["system_memory"] = {{"gpu_first_touch_pages", system.gpu_first_touch_pages},
                        {"cpu_first_touch_pages", system.cpu_first_touch_pages},
                        {"host_fallback_pages", system.host_fallback_pages},
                        {"migrated_pages", system.migrated_pages},
                        {"max_gpu_pages", system.max_gpu_pages}};
  j["prefetch_use"] = prefetch_use_json();
  j["policies"] = policy_report;
  j["wall_seconds"] = wall_seconds;
  j["accesses_per_second"] = wall_seconds > 0 ? static_cast<double>(accesses) / wall_seconds : 0;
  return j;
}

}  // namespace uvmsim
