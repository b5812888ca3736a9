#include "tessera/cli/ycsb_report.h"

#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace tessera::cli::ycsb {
namespace {

double Micros(uint64_t nanos) { return static_cast<double>(nanos) / 1000.0; }

std::string_view DistributionOf(const ReportContext& c) {
  if (c.spec->load) return "none";
  return DistributionName(c.options->distribution.value_or(c.spec->distribution));
}

}  // namespace

std::string FormatJson(const WorkloadResult& r, const ReportContext& c) {
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  j["description"] = std::string(c.spec->description);
  j["endpoint"] = c.endpoint;
  j["distribution"] = std::string(DistributionOf(c));
  j["records"] = c.options->records;
  j["threads"] = c.options->threads;
  j["fields"] = c.options->fields;
  j["value_size"] = c.options->value_size;
  j["ops"] = r.ops;
  j["seconds"] = r.seconds;
  j["throughput"] = r.throughput();
  j["errors"] = r.errors;
  j["stopped_early"] = r.stopped_early;
  nlohmann::ordered_json by_type = nlohmann::ordered_json::object();
  for (int i = 0; i < kOpTypeCount; i++) {
    const OpStats& s = r.by_type[i];
    if (s.calls == 0) continue;
    nlohmann::ordered_json t;
    t["calls"] = s.calls;
    t["errors"] = s.errors;
    t["mean_us"] = s.latency.mean_nanos() / 1000.0;
    t["p50_us"] = Micros(s.latency.Percentile(0.50));
    t["p99_us"] = Micros(s.latency.Percentile(0.99));
    t["p999_us"] = Micros(s.latency.Percentile(0.999));
    t["max_us"] = Micros(s.latency.max_nanos());
    by_type[std::string(OpTypeName(static_cast<OpType>(i)))] = std::move(t);
  }
  j["ops_by_type"] = std::move(by_type);
  j["errors_by_kind"] = r.errors_by_kind;
  j["error_examples"] = r.error_examples;
  return j.dump();
}

std::string FormatText(const WorkloadResult& r, const ReportContext& c) {
  std::string out = fmt::format(
      "workload {} ({}, {}) on {}: {} {} in {:.2f} s = {:.0f} {}/s, {} errors{}\n", r.workload,
      c.spec->description, DistributionOf(c), c.endpoint, r.ops, c.spec->load ? "rows" : "ops",
      r.seconds, r.throughput(), c.spec->load ? "rows" : "ops", r.errors,
      r.stopped_early ? " (stopped early: --max-errors reached)" : "");
  for (int i = 0; i < kOpTypeCount; i++) {
    const OpStats& s = r.by_type[i];
    if (s.calls == 0) continue;
    fmt::format_to(std::back_inserter(out),
                   "  {:<18} {:>9} calls {:>6} errors   latency us: mean {:>8.1f}  p50 {:>8.1f}"
                   "  p99 {:>8.1f}  p99.9 {:>8.1f}  max {:>9.1f}\n",
                   OpTypeName(static_cast<OpType>(i)), s.calls, s.errors,
                   s.latency.mean_nanos() / 1000.0, Micros(s.latency.Percentile(0.50)),
                   Micros(s.latency.Percentile(0.99)), Micros(s.latency.Percentile(0.999)),
                   Micros(s.latency.max_nanos()));
  }
  for (const auto& [kind, n] : r.errors_by_kind) {
    auto example = r.error_examples.find(kind);
    fmt::format_to(std::back_inserter(out), "  error {} x{}, e.g. {}\n", kind, n,
                   example == r.error_examples.end() ? "" : example->second);
  }
  return out;
}

}  // namespace tessera::cli::ycsb
