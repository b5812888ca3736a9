#include "tessera/metrics/samples.h"

#include <limits>
#include <utility>

namespace tessera::metrics {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void AddValue(prometheus::MetricFamily* family, double value, std::vector<Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (family->type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family->metric.push_back(std::move(m));
}

void AddHistogram(prometheus::MetricFamily* family, const LatencyHistogram::Snapshot& histogram,
                  std::vector<Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.histogram.sample_count = histogram.count;
  m.histogram.sample_sum = histogram.sum_seconds;
  for (size_t i = 0; i < histogram.bounds_seconds.size(); ++i) {
    m.histogram.bucket.push_back({histogram.cumulative[i], histogram.bounds_seconds[i]});
  }
  m.histogram.bucket.push_back({histogram.count, std::numeric_limits<double>::infinity()});
  family->metric.push_back(std::move(m));
}

}  // namespace tessera::metrics
