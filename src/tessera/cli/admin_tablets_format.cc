#include "tessera/cli/admin_tablets_format.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "tessera/cli/shell_format.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;

// One answer's view of a tablet, with who gave it.
struct Seen {
  const std::string* node;
  const v1::TabletReplicaView* view;
};

TabletLine MergeOne(uint64_t id, const std::vector<Seen>& seen) {
  TabletLine line;
  line.tablet_id = id;
  // The newest configuration; at equal epochs the acting primary's.
  const v1::TabletReplicaView* config = seen.front().view;
  for (const Seen& s : seen) {
    if (s.view->config_epoch() > config->config_epoch() ||
        (s.view->config_epoch() == config->config_epoch() && s.view->is_primary())) {
      config = s.view;
    }
    if (line.table_name.empty() && !s.view->table_name().empty()) {
      line.table_name = s.view->table_name();
      line.start_row = s.view->start_row();
      line.end_row = s.view->end_row();
    }
  }
  line.epoch = config->config_epoch();
  line.state = config->config_state();
  line.primary = config->primary();
  std::vector<std::string> replicas(config->replicas().begin(), config->replicas().end());
  for (const Seen& s : seen) {  // a holder the configuration does not name (yet)
    if (std::find(replicas.begin(), replicas.end(), *s.node) == replicas.end()) {
      replicas.push_back(*s.node);
    }
  }
  const std::set<std::string> rebuild(config->needs_rebuild().begin(),
                                      config->needs_rebuild().end());
  const v1::TabletReplicaView* acting = nullptr;
  for (const Seen& s : seen) {
    if (*s.node == line.primary && s.view->is_primary()) acting = s.view;
  }
  if (acting != nullptr) {
    line.primary_acting = true;
    line.primary_last = acting->last_sequence();
    line.hints_bytes = acting->retained_bytes() + acting->hint_bytes();
    line.hint_log_bytes = acting->hint_bytes();
    line.hint_log_records = acting->hint_records();
  }
  for (const std::string& endpoint : replicas) {
    ReplicaLine r;
    r.endpoint = endpoint;
    r.primary = endpoint == line.primary;
    r.needs_rebuild = rebuild.count(endpoint) > 0;
    for (const Seen& s : seen) {
      if (*s.node == endpoint) r.last_sequence = s.view->last_sequence();
    }
    if (acting != nullptr) {
      for (const v1::PeerProgress& p : acting->peers()) {
        if (p.endpoint() != endpoint) continue;
        r.answering = p.answering();
        r.needs_rebuild = r.needs_rebuild || p.needs_rebuild();
        r.copying = p.copying();
      }
      if (r.last_sequence.has_value()) {
        r.lag = static_cast<int64_t>(*line.primary_last) - static_cast<int64_t>(*r.last_sequence);
      }
    }
    line.replicas.push_back(std::move(r));
  }
  return line;
}

std::string Row(const std::string& row) { return shell::QuoteBytes(row); }

std::string Range(const TabletLine& t) {
  return Row(t.start_row) + ".." + (t.end_row.empty() ? "" : Row(t.end_row));
}

std::string Hex(uint64_t id) { return fmt::format("{:016x}", id); }

std::string Replicas(const TabletLine& t) {
  std::string out;
  for (const ReplicaLine& r : t.replicas) {
    if (!out.empty()) out += ", ";
    out += r.endpoint + " @" + (r.last_sequence ? std::to_string(*r.last_sequence) : "?");
    if (!r.primary) out += " lag " + (r.lag ? std::to_string(*r.lag) : std::string("?"));
    if (!r.answering) out += " (not answering)";
    if (r.copying) out += " (copying)";
  }
  return out;
}

std::string Rebuild(const TabletLine& t) {
  std::string out;
  for (const ReplicaLine& r : t.replicas) {
    if (r.needs_rebuild) out += (out.empty() ? "" : ",") + r.endpoint;
  }
  return out.empty() ? "-" : out;
}

// Bytes kept for peers, and how much of it (and how many records) is in the hint log.
std::string Hints(const TabletLine& t) {
  std::string out = HumanBytes(static_cast<int64_t>(t.hints_bytes));
  if (t.hint_log_records > 0) {
    out += fmt::format(" ({} in {} hints)", HumanBytes(static_cast<int64_t>(t.hint_log_bytes)),
                       t.hint_log_records);
  }
  return out;
}

// The instance every tablet's table lies in, or "" when they are several (or none).
std::string OneInstance(const TabletsView& view) {
  std::string instance;
  for (const TabletLine& t : view.tablets) {
    const size_t cut = t.table_name.rfind("/tables/");
    if (cut == std::string::npos) return "";
    std::string mine = t.table_name.substr(0, cut);
    if (!instance.empty() && mine != instance) return "";
    instance = std::move(mine);
  }
  return instance;
}

nlohmann::json OrNull(const auto& v) { return v.has_value() ? nlohmann::json(*v) : nullptr; }

}  // namespace

bool TabletsView::complete() const {
  return std::all_of(nodes.begin(), nodes.end(),
                     [](const NodeAnswer& n) { return n.tablets.has_value(); });
}

TabletsView MergeTablets(std::vector<NodeAnswer> answers) {
  TabletsView view;
  view.nodes = std::move(answers);
  std::map<uint64_t, std::vector<Seen>> by_id;
  for (const NodeAnswer& n : view.nodes) {
    if (!n.tablets.has_value()) continue;
    for (const v1::TabletReplicaView& t : n.tablets->tablets()) {
      by_id[t.tablet_id()].push_back(Seen{&n.tablets->endpoint(), &t});
    }
  }
  for (const auto& [id, seen] : by_id) view.tablets.push_back(MergeOne(id, seen));
  std::sort(view.tablets.begin(), view.tablets.end(), [](const TabletLine& a, const TabletLine& b) {
    return std::tie(a.table_name, a.start_row, a.tablet_id) <
           std::tie(b.table_name, b.start_row, b.tablet_id);
  });
  return view;
}

std::string FormatTablets(const TabletsView& view) {
  std::set<std::string> tables;
  for (const TabletLine& t : view.tablets) tables.insert(t.table_name);
  size_t answered = 0;
  for (const NodeAnswer& n : view.nodes) answered += n.tablets.has_value() ? 1 : 0;
  const std::string instance = OneInstance(view);
  std::string out =
      fmt::format("{} tablet{} of {} table{}{}, from {} of {} node{}\n", view.tablets.size(),
                  view.tablets.size() == 1 ? "" : "s", tables.size(), tables.size() == 1 ? "" : "s",
                  instance.empty() ? "" : " in " + instance, answered, view.nodes.size(),
                  view.nodes.size() == 1 ? "" : "s");
  for (const NodeAnswer& n : view.nodes) {
    if (n.tablets.has_value() && !n.tablets->note().empty()) {
      out += fmt::format("{}: {}\n", n.endpoint, n.tablets->note());
    }
  }
  std::vector<std::vector<std::string>> rows = {
      {"TABLE", "START..END", "TABLET ID", "EPOCH", "PRIMARY", "REBUILD", "HINTS",
       "REPLICAS (@ applied sequence, lag behind the primary)"}};
  for (const TabletLine& t : view.tablets) {
    std::string table = t.table_name.empty() ? "?" : t.table_name;
    if (!instance.empty()) table = table.substr(instance.size() + std::string("/tables/").size());
    std::string primary = t.primary.empty() ? "?" : t.primary;
    if (!t.primary.empty() && !t.primary_acting) primary += " (not acting)";
    rows.push_back({table, Range(t), Hex(t.tablet_id), t.epoch == 0 ? "-" : std::to_string(t.epoch),
                    primary, Rebuild(t), Hints(t), Replicas(t)});
  }
  out += Columns(rows);
  for (const NodeAnswer& n : view.nodes) {
    if (!n.tablets.has_value())
      out += fmt::format("{}: could not be asked: {}\n", n.endpoint, n.error);
  }
  return out;
}

nlohmann::json TabletsToJson(const TabletsView& view) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeAnswer& n : view.nodes) {
    nlohmann::json node = {
        {"endpoint", n.endpoint}, {"answered", n.tablets.has_value()}, {"error", n.error}};
    if (n.tablets.has_value()) {
      const TabletCounts counts = CountTablets(*n.tablets);
      node["replicated"] = n.tablets->replicated();
      node["note"] = n.tablets->note();
      node["tablets"] = counts.tablets;
      node["primaries"] = counts.primaries;
    }
    nodes.push_back(std::move(node));
  }
  nlohmann::json tablets = nlohmann::json::array();
  for (const TabletLine& t : view.tablets) {
    nlohmann::json replicas = nlohmann::json::array();
    for (const ReplicaLine& r : t.replicas) {
      replicas.push_back({{"endpoint", r.endpoint},
                          {"primary", r.primary},
                          {"last_sequence", OrNull(r.last_sequence)},
                          {"lag", OrNull(r.lag)},
                          {"answering", r.answering},
                          {"needs_rebuild", r.needs_rebuild},
                          {"copying", r.copying}});
    }
    tablets.push_back({{"table", t.table_name},
                       {"start_row", shell::EscapeBytes(t.start_row)},
                       {"end_row", shell::EscapeBytes(t.end_row)},
                       {"tablet_id", Hex(t.tablet_id)},
                       {"epoch", t.epoch},
                       {"state", t.state},
                       {"primary", t.primary},
                       {"primary_acting", t.primary_acting},
                       {"primary_last_sequence", OrNull(t.primary_last)},
                       {"hints_bytes", t.hints_bytes},
                       {"hint_log_bytes", t.hint_log_bytes},
                       {"hint_log_records", t.hint_log_records},
                       {"replicas", std::move(replicas)}});
  }
  return {{"nodes", std::move(nodes)}, {"tablets", std::move(tablets)}};
}

TabletCounts CountTablets(const v1::NodeTablets& answer) {
  TabletCounts counts;
  counts.tablets = static_cast<size_t>(answer.tablets_size());
  for (const v1::TabletReplicaView& t : answer.tablets())
    counts.primaries += t.is_primary() ? 1 : 0;
  return counts;
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 0) return "?";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], width[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tessera::cli
