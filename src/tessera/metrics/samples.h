// Samples: building the metric families a prometheus::Collectable returns at a scrape, for
// figures that are read when scraped (engine, cluster) rather than counted as they happen.
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <vector>

#include "prometheus/metric_family.h"
#include "tessera/util/latency_histogram.h"

namespace tessera::metrics {

using Label = prometheus::ClientMetric::Label;

// An empty family of `type` (Gauge, Counter, Histogram).
prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type);

// Adds one sample to a gauge or counter family.
void AddValue(prometheus::MetricFamily* family, double value, std::vector<Label> labels = {});

// Adds `histogram` (in seconds) to a histogram family.
void AddHistogram(prometheus::MetricFamily* family, const LatencyHistogram::Snapshot& histogram,
                  std::vector<Label> labels = {});

}  // namespace tessera::metrics
